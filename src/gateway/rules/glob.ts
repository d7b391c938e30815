/**
 * The path glob of `scope_rules`: `*` matches one segment, `**` any number of segments (none included), anything
 * else one literal segment.
 */

/** Whether the path's segments match the pattern's (both already split on `/`, empty segments dropped). */
export function matchSegments(pattern: readonly string[], segments: readonly string[], p = 0, s = 0): boolean {
  if (p === pattern.length) return s === segments.length;
  const head = pattern[p];
  if (head === "**") {
    for (let i = s; i <= segments.length; i++) if (matchSegments(pattern, segments, p + 1, i)) return true;
    return false;
  }
  if (s === segments.length) return false;
  return (head === "*" || head === segments[s]) && matchSegments(pattern, segments, p + 1, s + 1);
}
