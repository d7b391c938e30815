/** The proxy's `scope_rules` check: does one of the token's scopes allow this method and path? */
import { matchSegments } from "../rules/glob.ts";

/**
 * A rule is `"METHOD /path"`: METHOD may be `*`; the path is a glob (rules/glob.ts). `path` is the upstream path
 * relative to api_base_url, starting with `/`, without the query.
 */
export function allowedByScopeRules(
  rules: Record<string, readonly string[]>,
  scopes: readonly string[],
  method: string,
  path: string,
): boolean {
  const segments = path.split("/").filter(Boolean);
  if (scopes.some((scope) => (rules[scope] ?? []).some((rule) => matchRule(rule, method, segments)))) return true;
  return scopes.length > 0 && (rules[ANY_SCOPE] ?? []).some((rule) => matchRule(rule, method, segments));
}

/**
 * The `scope_rules` key that any granted scope opens (DESIGN §11): what a provider grants every token, e.g. its
 * identity endpoint (GitHub `GET /user`). A token with no scope at all gets nothing from it.
 */
export const ANY_SCOPE = "*";

/** Whether one of `rules` (same grammar) matches: approval_rules (DESIGN §15) use the scope_rules matcher. */
export function matchesAnyRule(rules: readonly string[], method: string, path: string): boolean {
  const segments = path.split("/").filter(Boolean);
  return rules.some((rule) => matchRule(rule, method, segments));
}

// internal

function matchRule(rule: string, method: string, segments: readonly string[]): boolean {
  const space = rule.indexOf(" ");
  const ruleMethod = rule.slice(0, space);
  if (ruleMethod !== "*" && ruleMethod !== method.toUpperCase()) return false;
  return matchSegments(rule.slice(space + 1).split("/").filter(Boolean), segments);
}
