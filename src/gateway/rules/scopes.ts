/** Scope rules: the effective-scope intersection and the proxy's `scope_rules` matching. */

/**
 * Spec §1.8: effective scopes = agent-approved ∩ user-consented ∩ requested, in the order they were requested.
 * @example intersectScopes(["a","b"], ["b","c"], ["b","a"]) // ["b"]
 */
export function intersectScopes(approved: readonly string[], consented: readonly string[], requested: readonly string[]): string[] {
  const a = new Set(approved);
  const c = new Set(consented);
  return [...new Set(requested)].filter((s) => a.has(s) && c.has(s));
}

/** Requested scopes that are not in the approved list (for SCOPE_NOT_APPROVED details). */
export function unapprovedScopes(approved: readonly string[], requested: readonly string[]): string[] {
  const a = new Set(approved);
  return [...new Set(requested)].filter((s) => !a.has(s));
}

/** Parses an OAuth `scope` value (RFC 6749 §3.3: space-delimited). */
export function parseScopeString(scope: string | undefined | null): string[] {
  return (scope ?? "").split(" ").filter(Boolean);
}

/**
 * Whether a request is allowed by a provider's `scope_rules` for the token's scopes. A rule is `"METHOD /path"`:
 * METHOD may be `*`; in the path `*` matches one segment and `**` any number (including none) at the end or middle.
 * `path` is the upstream path relative to api_base_url, starting with `/`, without the query.
 */
export function allowedByScopeRules(
  rules: Record<string, readonly string[]>,
  scopes: readonly string[],
  method: string,
  path: string,
): boolean {
  return scopes.some((scope) => (rules[scope] ?? []).some((rule) => matchRule(rule, method, path)));
}

// internal

function matchRule(rule: string, method: string, path: string): boolean {
  const space = rule.indexOf(" ");
  const ruleMethod = rule.slice(0, space);
  if (ruleMethod !== "*" && ruleMethod !== method.toUpperCase()) return false;
  return matchSegments(rule.slice(space + 1).split("/").filter(Boolean), path.split("/").filter(Boolean));
}

function matchSegments(pattern: string[], segments: string[]): boolean {
  if (pattern.length === 0) return segments.length === 0;
  const [head, ...rest] = pattern;
  if (head === "**") {
    for (let i = 0; i <= segments.length; i++) if (matchSegments(rest, segments.slice(i))) return true;
    return false;
  }
  if (segments.length === 0) return false;
  return (head === "*" || head === segments[0]) && matchSegments(rest, segments.slice(1));
}
