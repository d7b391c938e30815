/**
 * The scope_rules glob (rules/glob.ts): the same answers as the plain recursive definition on every small case, and
 * no backtracking — a path built against many `**` is decided in one pass (the old recursive matcher took seconds on
 * the pathological case below; the time itself is measured in scripts/bench/glob.ts, not asserted here).
 */
import { describe, expect, test } from "bun:test";
import { matchSegments } from "../../../../src/gateway/rules/glob.ts";

/** The definition, as a recursion (exponential on adversarial input: only for small cases). */
function reference(p: readonly string[], s: readonly string[], i = 0, j = 0): boolean {
  if (i === p.length) return j === s.length;
  if (p[i] === "**") {
    for (let k = j; k <= s.length; k++) if (reference(p, s, i + 1, k)) return true;
    return false;
  }
  return j < s.length && (p[i] === "*" || p[i] === s[j]) && reference(p, s, i + 1, j + 1);
}

describe("the path glob", () => {
  test("agrees with the recursive definition on every pattern and path of up to 5 segments over {a, b, *, **}", () => {
    const alphabet = ["a", "b", "*", "**"];
    const words = (n: number, of: string[]): string[][] => (n === 0 ? [[]] : words(n - 1, of).flatMap((w) => of.map((x) => [...w, x])));
    const patterns = [0, 1, 2, 3, 4].flatMap((n) => words(n, alphabet));
    const paths = [0, 1, 2, 3, 4, 5].flatMap((n) => words(n, ["a", "b", "c"]));
    let compared = 0;
    for (const p of patterns) {
      for (const s of paths) {
        if (matchSegments(p, s) !== reference(p, s)) throw new Error(`${p.join("/")} vs ${s.join("/")}: ${matchSegments(p, s)}`);
        compared++;
      }
    }
    expect(compared).toBe(patterns.length * paths.length);
  });

  test("the pathological case (8 `**` between literals, a 296-char path that almost matches) is decided: no match", () => {
    const pattern = ["a", "**", "a", "**", "a", "**", "a", "**", "a", "**", "a", "**", "a", "**", "a", "**", "b"];
    const path = Array.from({ length: 148 }, () => "a");
    expect(matchSegments(pattern, path)).toBe(false);
    expect(matchSegments(pattern, [...path, "b"])).toBe(true);
  });
});
