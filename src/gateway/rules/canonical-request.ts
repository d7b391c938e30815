/**
 * The one canonical request every policy decision reads (DESIGN §16): computed once per proxied request, in gateway
 * mode (/ath/proxy/{id}/*) and native mode (/api/*) alike, and used by scope_rules, approval_rules, the digest, the
 * approval page and the audit record. Pure: no I/O, no clock.
 *
 * - A path whose segments, percent-decoded once, hold a control (C0, DEL, C1), a Unicode format character (Cf), `\`,
 *   `%` (double encoding), `/` (`%2F`), or are `.`/`..`/empty, is *ambiguous*: upstreams disagree on what it names, so
 *   it is refused (400 INVALID_REQUEST, `details.reason: "ambiguous_path"`). So is `;` anywhere, unless the provider
 *   sets `path_params` (then `;…` is cut off each segment for matching, and what is left is judged again).
 * - The *literal* form is the decoded path as forwarded (a trailing `/` kept). The *loose* form lower-cases it, cuts
 *   trailing dots and whitespace from each segment and one trailing `.json`/`.xml` from the last, and drops a trailing
 *   `/`: what Spring, Tomcat, ASP.NET and friends treat as the same path.
 * - Rules are compared form to form (a rule's loose form is made by the same transformation). An allow-list rule
 *   (scope_rules, a policy `allow`) matches only if both forms match; a deny-list rule (approval, policy deny/approve,
 *   budget) if either does. `HEAD` is matched as `GET` too.
 */
import { AthError } from "../../protocol/index.ts";
import { matchSegments } from "./glob.ts";

/** Method, path (as sent, literal, loose) and query of one proxied request; bound headers and body are added to it. */
export interface CanonicalRequest {
  /** Upper-case (the proxy forwards only PROXY_METHODS, which are). */
  method: string;
  /** The path as sent, relative to api_base_url, percent-encoded, starting with `/`. */
  rawPath: string;
  /** The literal form: the decoded path, starting with `/` (a trailing `/` kept). */
  literal: string;
  literalSegments: readonly string[];
  /** The loose form (see above); never a trailing `/`. */
  loose: string;
  looseSegments: readonly string[];
  /** The query string exactly as sent, without `?` ("" when none). */
  query: string;
}

/** A canonical request together with what the upstream would receive beside its line. */
export interface CanonicalWithContent extends CanonicalRequest {
  /** Bound headers (boundHeaders): lower-case names. */
  headers: Readonly<Record<string, string>>;
  body: Uint8Array;
}

/**
 * The canonical request for `method` on `rawPath` (the request-target after the provider prefix, still
 * percent-encoded, no leading `/`) with query `search` (with or without `?`). Throws 400 INVALID_REQUEST
 * (`reason: "ambiguous_path"`) for an ambiguous path.
 */
export function canonicalRequest(method: string, rawPath: string, search: string, o: { pathParams?: boolean } = {}): CanonicalRequest {
  const raw = rawPath === "" ? [] : rawPath.split("/");
  const literal: string[] = [];
  for (let i = 0; i < raw.length; i++) {
    const segment = raw[i]!;
    // a trailing slash ("notes/") is kept in the literal form: only other empty segments are ambiguous
    if (segment === "" && i === raw.length - 1 && i > 0) {
      literal.push("");
      continue;
    }
    let decoded: string;
    try {
      decoded = segment.includes("%") ? decodeURIComponent(segment) : segment;
    } catch {
      throw ambiguous("malformed percent-encoding in the path");
    }
    judge(decoded);
    if (decoded.includes(";")) {
      if (!o.pathParams) throw ambiguous("';' in the path (its segment parameters are read differently by different servers)");
      decoded = decoded.slice(0, decoded.indexOf(";"));
      judge(decoded);
    }
    literal.push(decoded);
  }
  const loose = looseOf(literal, false);
  return {
    method: method.toUpperCase(),
    rawPath: "/" + rawPath,
    literal: "/" + literal.join("/"),
    literalSegments: literal,
    loose: "/" + loose.join("/"),
    looseSegments: loose,
    query: search.startsWith("?") ? search.slice(1) : search,
  };
}

/**
 * An MCP call as a canonical request (DESIGN §18): method `MCP`, path `/<JSON-RPC method>/<name>`, no query, the JSON
 * content type as its one bound header, and as its body the bytes of `params.arguments` exactly as the client sent
 * them (empty when it sent none) — so an approval, its digest and its page are about the bytes the upstream reads,
 * whatever the JSON-RPC id or session, never a re-serialization (which would merge duplicate keys and round numbers).
 */
export function mcpCanonicalRequest(method: string, name: string | null, argumentBytes: Uint8Array): CanonicalWithContent {
  const path = `/${method}/${name ?? ""}`;
  const segments = path.split("/").filter(Boolean);
  return {
    method: "MCP",
    rawPath: path,
    literal: path,
    literalSegments: segments,
    loose: path,
    looseSegments: segments,
    query: "",
    headers: MCP_BOUND_HEADERS,
    body: argumentBytes,
  };
}

const MCP_BOUND_HEADERS: Readonly<Record<string, string>> = Object.freeze({ "content-type": "application/json" });

/**
 * Request headers that do not bind an approval (DESIGN §16): content negotiation, transport and tracing. Every other
 * forwarded header is part of the request a person approves.
 */
export const UNBOUND_HEADERS: ReadonlySet<string> = new Set([
  "accept", "accept-encoding", "accept-language", "user-agent", "content-length", "traceparent", "tracestate", "x-request-id",
]);

/** The bound headers of the forwarded headers (lower-case names), sorted by name. */
export function boundHeaders(forwarded: Readonly<Record<string, string>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of Object.keys(forwarded).map((n) => n.toLowerCase()).sort()) {
    if (!UNBOUND_HEADERS.has(name)) out[name] = forwarded[name] ?? "";
  }
  return out;
}

/** The bound headers as the digest reads them: sorted lower-case `name: value` lines. */
export function boundHeaderLines(headers: Readonly<Record<string, string>>): string {
  return Object.keys(headers)
    .sort()
    .map((name) => `${name}: ${headers[name]}`)
    .join("\n");
}

export type RuleMode = "both" | "either";

/**
 * Whether `rule` ("METHOD /path/glob", written decoded) matches the request: in `both` forms (allow-lists) or
 * `either` form (deny-lists).
 */
export function ruleMatches(rule: string, r: CanonicalRequest, mode: RuleMode): boolean {
  const c = compiled(rule);
  if (c.method !== "*" && c.method !== r.method && !(r.method === "HEAD" && c.method === "GET")) return false;
  const literal = matchSegments(c.literal, r.literalSegments);
  if (mode === "both" ? !literal : literal) return literal;
  return matchSegments(c.loose, r.looseSegments);
}

/** Whether any of `rules` matches (see ruleMatches). */
export function anyRuleMatches(rules: readonly string[], r: CanonicalRequest, mode: RuleMode): boolean {
  for (const rule of rules) if (ruleMatches(rule, r, mode)) return true;
  return false;
}

// internal

function judge(decoded: string): void {
  if (decoded === "") throw ambiguous("empty path segments are not allowed");
  if (decoded === "." || decoded === "..") throw ambiguous("dot segments are not allowed in the path");
  if (FORBIDDEN.test(decoded)) {
    const ch = FORBIDDEN.exec(decoded)![0];
    throw ambiguous(
      ch === "/" || ch === "\\"
        ? "encoded slashes and backslashes are not allowed in the path"
        : ch === "%"
          ? "double percent-encoding is not allowed in the path"
          : `the path holds an invisible or control character (U+${ch.codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0")})`,
    );
  }
}

/** C0, DEL, C1, Unicode format characters (Cf: zero-width, bidi controls…), `\`, `/` and `%` after one decoding. */
const FORBIDDEN = /[\u0000-\u001f\u007f-\u009f\p{Cf}\\/%]/u;

/** Trailing dots and whitespace, cut off each segment in the loose form. */
const TRAILING = /[.\s]+$/u;
const SUFFIX = /\.(json|xml)$/;

/**
 * The loose form of literal segments (a request's, or a rule's when `glob`: `*`/`**` kept as they are). A trailing
 * empty segment (a trailing `/`) is dropped; a segment that loosening empties stays empty.
 */
function looseOf(literal: readonly string[], glob: boolean): string[] {
  const n = literal.length && literal[literal.length - 1] === "" ? literal.length - 1 : literal.length;
  const out: string[] = new Array(n);
  for (let i = 0; i < n; i++) {
    let s = literal[i]!;
    if (glob && (s === "*" || s === "**")) {
      out[i] = s;
      continue;
    }
    // upper then lower: folds what case-insensitive servers (.NET's OrdinalIgnoreCase, Java's equalsIgnoreCase)
    // equate beyond ASCII — `ſ` (U+017F) is `S`, the Kelvin sign `K`
    s = s.toUpperCase().toLowerCase();
    const semi = s.indexOf(";");
    if (semi >= 0) s = s.slice(0, semi);
    s = s.replace(TRAILING, "");
    if (i === n - 1) s = s.replace(SUFFIX, "").replace(TRAILING, "");
    out[i] = s;
  }
  return out;
}

interface CompiledRule {
  method: string;
  literal: string[];
  loose: string[];
}

/** Rules are compiled once per distinct text (bounded cache): the proxy matches them on every request. */
const cache = new Map<string, CompiledRule>();

function compiled(rule: string): CompiledRule {
  let c = cache.get(rule);
  if (c === undefined) {
    const space = rule.indexOf(" ");
    const path = rule.slice(space + 1);
    const parts = path.split("/").slice(1);
    // inner empty segments of a rule mean nothing; a trailing `/` is kept, as in the literal form of a request
    const literal = parts.filter((s, i) => s !== "" || (i === parts.length - 1 && i > 0));
    c = { method: rule.slice(0, space), literal, loose: looseOf(literal, true) };
    if (cache.size >= 10_000) cache.clear();
    cache.set(rule, c);
  }
  return c;
}

function ambiguous(message: string): AthError {
  return new AthError("INVALID_REQUEST", `Ambiguous proxy path: ${message}`, { field: "path", reason: "ambiguous_path" });
}
