/** Scope rules: the effective-scope intersection, unapproved scopes, and parsing a `scope` value. */

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
