/** The proxy's `scope_rules` check: does one of the token's scopes allow this request? */
import { ruleMatches, type CanonicalRequest } from "../rules/canonical-request.ts";

/**
 * A rule is `"METHOD /path"`: METHOD may be `*`; the path is a glob (rules/glob.ts), written decoded. An allow-list
 * fails closed (DESIGN §16): a rule allows the request only if it matches both its literal and its loose form.
 */
export function allowedByScopeRules(rules: Record<string, readonly string[]>, scopes: readonly string[], r: CanonicalRequest): boolean {
  return scopes.some((scope) => (rules[scope] ?? []).some((rule) => ruleMatches(rule, r, "both")));
}
