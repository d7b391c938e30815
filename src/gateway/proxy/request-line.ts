/**
 * What a proxied request's line alone decides — its canonical request (DESIGN §16), its upstream URL and which sets of
 * scopes scope_rules let through — remembered per provider configuration: agents call the same few endpoints over
 * and over, and each of these costs more than a Map lookup (decoding and judging every segment, the loose form,
 * `new URL`, the glob match; ≈ 4 µs of a warm request in `scripts/bench/inproc-ab.ts`).
 *
 * Keyed by the configuration object itself (a changed provider is a new object: nothing stale survives it) and by
 * method, path and query exactly as sent. Only lines that passed are remembered: an ambiguous or escaping path is
 * judged, and refused, every time. Bounded: a map that fills is started afresh.
 */
import type { ProviderConfig } from "../../protocol/index.ts";
import { canonicalRequest, type CanonicalRequest } from "../rules/canonical-request.ts";
import { allowedByScopeRules } from "../rules/scope-rules.ts";
import { upstreamUrl } from "./url.ts";

/** Lines remembered per provider configuration. */
const MAX_LINES = 1_000;
/** Scope sets remembered per line. */
const MAX_SCOPE_SETS = 64;

export interface RequestLine {
  /** Shared by every request with this line: read it, never change it. */
  readonly canonical: CanonicalRequest;
  /** The upstream URL (shared likewise). */
  readonly target: URL;
  /** Whether the provider's scope_rules let a token with `scopes` make this request (no scope_rules: undefined). */
  allows(scopes: readonly string[]): boolean | undefined;
}

/**
 * The request line of `method rawPath?search` for a provider with `config` (which has an api_base_url). Throws what
 * canonicalRequest and upstreamUrl throw (400 INVALID_REQUEST).
 */
export function requestLine(config: ProviderConfig & { api_base_url: string }, method: string, rawPath: string, search: string): RequestLine {
  let lines = memo.get(config);
  if (lines === undefined) memo.set(config, (lines = new Lines()));
  let byTarget = lines.byMethod.get(method);
  if (byTarget === undefined) lines.byMethod.set(method, (byTarget = new Map()));
  // (no string joined for a target without a query: most calls)
  const key = search === "" ? rawPath : rawPath + search;
  let line = byTarget.get(key);
  if (line === undefined) {
    line = lineOf(config, method, rawPath, search);
    if (lines.size >= MAX_LINES) {
      lines.byMethod.clear();
      lines.size = 0;
      lines.byMethod.set(method, (byTarget = new Map()));
    }
    byTarget.set(key, line);
    lines.size++;
  }
  return line;
}

// internal

/** One provider configuration's lines, by method, then by path and query as sent. */
class Lines {
  readonly byMethod = new Map<string, Map<string, RequestLine>>();
  size = 0;
}

const memo = new WeakMap<ProviderConfig, Lines>();

function lineOf(config: ProviderConfig & { api_base_url: string }, method: string, rawPath: string, search: string): RequestLine {
  // The canonical request first: an ambiguous path is refused before anything else is said about it.
  const canonical = canonicalRequest(method, rawPath, search, { pathParams: config.path_params });
  const target = upstreamUrl(config.api_base_url, rawPath, search);
  const rules = config.scope_rules;
  const verdicts = new Map<string, boolean>();
  // The last scopes array asked about and its verdict: a token's record (and its scopes array) is the cache's, the same
  // object call after call — no join per call while one token calls this line.
  let lastScopes: readonly string[] | null = null;
  let lastVerdict = false;
  return {
    canonical,
    target,
    allows(scopes) {
      if (!rules) return undefined;
      if (scopes === lastScopes) return lastVerdict;
      const key = scopes.join(" ");
      let v = verdicts.get(key);
      if (v === undefined) {
        v = allowedByScopeRules(rules, scopes, canonical);
        if (verdicts.size >= MAX_SCOPE_SETS) verdicts.clear();
        verdicts.set(key, v);
      }
      lastScopes = scopes;
      lastVerdict = v;
      return v;
    },
  };
}
