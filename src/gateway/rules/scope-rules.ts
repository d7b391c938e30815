/** The proxy's `scope_rules` check: does one of the token's scopes allow this request? */
import { ruleMatches, type CanonicalRequest } from "./canonical-request.ts";

/**
 * A rule is `"METHOD /path"`: METHOD may be `*`; the path is a glob (rules/glob.ts), written decoded. An allow-list
 * fails closed (DESIGN §16): a rule allows the request only if it matches both its literal and its loose form.
 */
export function allowedByScopeRules(rules: Record<string, readonly string[]>, scopes: readonly string[], r: CanonicalRequest): boolean {
  if (scopes.some((scope) => (rules[scope] ?? []).some((rule) => ruleMatches(rule, r, "both")))) return true;
  return scopes.length > 0 && (rules[ANY_SCOPE] ?? []).some((rule) => ruleMatches(rule, r, "both"));
}

/**
 * The `scope_rules` key that any granted scope opens (DESIGN §11): what a provider grants every token, e.g. its
 * identity endpoint (GitHub `GET /user`). A token with no scope at all gets nothing from it.
 */
export const ANY_SCOPE = "*";
