/**
 * The proxy's header rules as named lists (hono's proxy helper keeps them the same way), applied by one filter in
 * both directions.
 */
import { HEADERS } from "../../protocol/constants.ts";
import { AthError } from "../../protocol/errors.ts";

/** RFC 9110 §7.6.1: hop-by-hop fields are meaningful for one connection only and never forwarded. */
const HOP_BY_HOP = ["connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade", "proxy-authenticate", "proxy-authorization"];
/** Credentials and routing of the agent↔gateway hop; the upstream must never see them. */
const AGENT_HOP = ["host", "authorization", "dpop", "cookie", "content-length"];
/**
 * Who the client is and how it reached the gateway, as an upstream might trust it (DESIGN §14): forwarding fields and
 * client-address fields. Besides these names, every `X-Forwarded-*` (…-For, -Host, -Proto, -Prefix, -Uri, -Path,
 * -Method, -Port, -Server…) goes — see FORWARDING_PREFIXES. Dropped both ways; the gateway adds none of them.
 */
const FORWARDING = ["forwarded", "x-real-ip", "x-client-ip", "client-ip", "true-client-ip", "cf-connecting-ip", "fastly-client-ip", "x-cluster-client-ip", "x-proxyuser-ip", "x-rewrite-url"];
/** Prefixes of forwarding fields (`X-Original-*` also names the method and URL the upstream would act on). */
const FORWARDING_PREFIXES = ["x-forwarded-", "x-original-"];
/**
 * Headers some frameworks read as "the real method / URL" (Google APIs, Symfony, IIS): scope_rules judged the
 * request's own method and path, so these would let an agent do what no rule allowed.
 */
const OVERRIDES = ["x-http-method-override", "x-http-method", "x-method-override", "x-original-url", "x-rewrite-url", "x-original-method"];
/** The upstream may not set cookies on the gateway's origin. */
const UPSTREAM_COOKIES = ["set-cookie", "set-cookie2"];

const TO_UPSTREAM = new Set([...HOP_BY_HOP, ...AGENT_HOP, ...FORWARDING, ...OVERRIDES]);
const TO_AGENT = new Set([...HOP_BY_HOP, ...FORWARDING, ...UPSTREAM_COOKIES]);

/** Header fields as a plain object (lower-case names; repeated fields joined, which RFC 9110 §5.3 allows). */
export type HeaderFields = Record<string, string>;

/**
 * The agent's request headers the upstream may see (the upstream token is added by the relay), with the provider's
 * static `api_headers` (Notion-Version) replacing the agent's own: scope_rules were written for that API version.
 */
export function upstreamRequestHeaders(incoming: Headers, apiHeaders: Readonly<Record<string, string>> = {}): HeaderFields {
  return fieldsOf(forwardInPlace(new Headers(incoming), apiHeaders));
}

/**
 * The same rules applied to the agent's request headers themselves, in place (the proxy's own call: the request is the
 * proxy's to spend, and a copy per call costs ≈ 3 % of a bare hop's throughput, scripts/bench hop variants). Bun's fetch converts a plain
 * object into its native headers on every call, at a cost on both of the proxy's threads (≈ 5 µs per request, a tenth of
 * a bare hop): the upstream call gets these native headers as they are. Set-Cookie, which the plain view drops as the
 * one field never joined, is dropped by name. What the caller still needs of the dropped fields (Content-Length,
 * X-ATH-Approval) it reads first.
 */
export function forwardInPlace(out: Headers, apiHeaders: Readonly<Record<string, string>> = {}): Headers {
  const listed = listedBy(out.get("connection"));
  let dropped: string[] | null = null;
  let underscored = false;
  for (const name of out.keys()) {
    if (TO_UPSTREAM.has(name) || name === "set-cookie" || name.startsWith("x-ath-") || forwarding(name) || listed.includes(name)) (dropped ??= []).push(name);
    else if (!underscored && name.includes("_")) underscored = true;
  }
  if (dropped !== null) for (const name of dropped) out.delete(name);
  if (underscored) {
    const fields = out.toJSON() as HeaderFields;
    for (const name in fields) if (name.includes("_")) refuseTwoSpellings(fields, name);
  }
  for (const name in apiHeaders) out.set(name, apiHeaders[name]!);
  return out;
}

/** The forwarded headers as the rules read them (lower-case names, repeated fields joined), without the upstream token. */
export function fieldsOf(headers: Headers): HeaderFields {
  const fields = headers.toJSON() as Record<string, string | string[]>;
  delete fields.authorization;
  for (const name in fields) if (Array.isArray(fields[name])) delete fields[name];
  return fields as HeaderFields;
}

const NO_NAMES: readonly string[] = [];

/** The upstream's response headers the agent may see, as a plain copy (for the answers relayed as new Responses). */
export function agentResponseHeaders(incoming: Headers): HeaderFields {
  const out = incoming.toJSON() as Record<string, string | string[]>;
  // Set-Cookie is the one field that is not joined (RFC 9110 §5.3); it never reaches the agent anyway
  for (const name in out) if (Array.isArray(out[name])) delete out[name];
  AGENT_ANSWER.filter(out as HeaderFields);
  return out as HeaderFields;
}

/**
 * The upstream's response headers made fit for the agent in place (the same rules as agentResponseHeaders), so the
 * upstream's Response — its body untouched, streaming — is the agent's answer: no copy of the headers, no second
 * Response per request.
 */
export function filterResponseHeaders(headers: Headers): Headers {
  const listed = listedBy(headers.get("connection"));
  let dropped: string[] | null = null;
  for (const name of headers.keys()) if (notForAgent(name, listed)) (dropped ??= []).push(name);
  if (dropped !== null) for (const name of dropped) headers.delete(name);
  headers.set(HEADERS.upstream, "true");
  return headers;
}

/**
 * The same rules, applied by the upstream client while it parses an answer (proxy/http1.ts `UpstreamInit.answer`): on
 * its fields as a plain object of lower-case names, before the Response exists — no Headers walk, delete and set per
 * call after it (≈ 3 µs of a proxied GET in issue 41's profile). The Responses so made are remembered, and the proxy
 * filters only the others (`filtered`).
 */
export const AGENT_ANSWER = {
  filter(fields: Record<string, string>): void {
    const listed = listedBy(fields.connection);
    for (const name in fields) if (notForAgent(name, listed)) delete fields[name];
    // after the rule, which dropped any X-ATH-* the upstream sent: only the gateway says what is the upstream's
    fields[HEADERS.upstream] = "true";
  },
  made(res: Response): void {
    agentReady.add(res);
  },
};

/** Whether `res` came with its headers made by AGENT_ANSWER.filter (nothing left to filter). */
export function filtered(res: Response): boolean {
  return agentReady.has(res);
}

// internal

const agentReady = new WeakSet<Response>();

/**
 * The one rule for an upstream's response field (every answer path above): hop-by-hop, Set-Cookie, forwarding fields,
 * every name the Connection header lists (RFC 9110 §7.6.1) and every `X-ATH-*` (only the gateway speaks as the
 * gateway: an upstream cannot forge a refusal) never reach the agent.
 */
function notForAgent(name: string, listed: readonly string[]): boolean {
  return TO_AGENT.has(name) || name.startsWith("x-ath-") || forwarding(name) || listed.includes(name);
}

/** The names a Connection header lists, lower-case (none when absent). */
function listedBy(connection: string | null | undefined): readonly string[] {
  return typeof connection === "string" ? connection.toLowerCase().split(",").map((s) => s.trim()) : NO_NAMES;
}

/**
 * One header model (issue 35): `X_Mode` is `X-Mode` to many servers (every CGI-style gateway reads both as HTTP_X_MODE)
 * and to the rules (domain/policy.ts reads `_` as `-`). Both spellings in one request would let a rule read one value
 * while the upstream reads the other: 400, nothing forwarded.
 */
function refuseTwoSpellings(fields: HeaderFields, name: string): void {
  const dashed = name.replaceAll("_", "-");
  for (const other in fields) {
    if (other !== name && other.replaceAll("_", "-") === dashed) {
      throw new AthError("INVALID_REQUEST", `The request spells one header two ways (${other}, ${name}): send it once`, { field: "headers", reason: "ambiguous_header" });
    }
  }
}

function forwarding(name: string): boolean {
  return name.charCodeAt(0) === 120 /* x */ && FORWARDING_PREFIXES.some((p) => name.startsWith(p));
}
