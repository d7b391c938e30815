/**
 * The path glob of `scope_rules`: `*` matches one non-empty segment, `**` any number of segments (none included), anything
 * else one literal segment. Matched by simulating the pattern as a set of positions, one step per path segment —
 * O(pattern × path) with no backtracking, so time is linear in the path whatever the pattern (DESIGN §14: several
 * `**` made the recursive matcher polynomial; one 296-char path blocked the event loop for seconds). Patterns are
 * bounded at configuration (protocol/provider-config.ts: ≤ 512 chars, ≤ 8 `**`).
 */

/** Whether the path's segments match the pattern's (both already split on `/`, empty segments dropped). */
export function matchSegments(pattern: readonly string[], segments: readonly string[]): boolean {
  const m = pattern.length;
  // live[i]: the first i pattern segments can match the path read so far
  let live = new Uint8Array(m + 1);
  let next = new Uint8Array(m + 1);
  live[0] = 1;
  close(pattern, live);
  for (const segment of segments) {
    next.fill(0);
    let any = false;
    for (let i = 0; i < m; i++) {
      if (live[i] === 0) continue;
      const head = pattern[i];
      if (head === "**") next[i] = 1; // ** takes this segment and may take more
      else if ((head === "*" && segment !== "") || head === segment) next[i + 1] = 1;
      else continue;
      any = true;
    }
    if (!any) return false;
    close(pattern, next);
    [live, next] = [next, live];
  }
  return live[m] === 1;
}

// internal

/** `**` may match no segment: a live position before one makes the position after it live too. */
function close(pattern: readonly string[], live: Uint8Array): void {
  for (let i = 0; i < pattern.length; i++) if (live[i] === 1 && pattern[i] === "**") live[i + 1] = 1;
}
