/**
 * The scope_rules glob on its worst case (DESIGN §14): a pattern with 8 `**` between literal segments against paths
 * that almost match, of growing length — the time per match of rules/glob.ts, and of the recursive matcher it
 * replaced (which backtracks: polynomial in the path, degree the number of `**`; skipped once it passes 2 s).
 *
 * Usage: bun scripts/bench/glob.ts
 */
import { matchSegments } from "../../src/gateway/rules/glob.ts";

function recursive(p: readonly string[], s: readonly string[], i = 0, j = 0): boolean {
  if (i === p.length) return j === s.length;
  if (p[i] === "**") {
    for (let k = j; k <= s.length; k++) if (recursive(p, s, i + 1, k)) return true;
    return false;
  }
  return j < s.length && (p[i] === "*" || p[i] === s[j]) && recursive(p, s, i + 1, j + 1);
}

const pattern = ["a", "**", "a", "**", "a", "**", "a", "**", "a", "**", "a", "**", "a", "**", "a", "**", "b"];
let oldTooSlow = false;
console.log("path segments\tpath chars\tlinear (µs/match)\trecursive (ms/match)");
for (const n of [16, 32, 64, 148, 1000, 4000]) {
  const path = Array.from({ length: n }, () => "a");
  const reps = 200;
  let t = performance.now();
  for (let r = 0; r < reps; r++) matchSegments(pattern, path);
  const linear = ((performance.now() - t) / reps) * 1000;
  let old = "skipped";
  if (!oldTooSlow) {
    t = performance.now();
    recursive(pattern, path);
    const ms = performance.now() - t;
    old = ms.toFixed(1);
    if (ms > 2000) oldTooSlow = true;
  }
  console.log(`${n}\t${2 * n}\t${linear.toFixed(1)}\t${old}`);
}
