/** Bounded re-indenting (src/cli/kit/pretty-json.ts, DESIGN §14 "Bounded work per input"). */
import { describe, expect, test } from "bun:test";
import { prettyJson } from "../../../src/cli/kit/pretty-json.ts";

describe("prettyJson", () => {
  test("ordinary JSON is indented exactly as JSON.stringify(v, null, 2) does", () => {
    for (const v of [{ a: 1, b: [1, "x", null, { c: true }], d: {}, e: [] }, [1, 2], "s", 3, null, { "k\u202e": "\u001b" }]) {
      expect(prettyJson(JSON.stringify(v))).toBe(JSON.stringify(v, null, 2));
    }
  });
  test("nesting deeper than 32 is shown raw (16 KiB of [[[…]]] would be ~64 MB indented)", () => {
    const deep = "[".repeat(8000) + "]".repeat(8000);
    expect(prettyJson(deep)).toBe(deep);
    const ok = "[".repeat(32) + "]".repeat(32);
    expect(prettyJson(ok)).not.toBe(ok);
    // brackets inside strings do not count
    expect(prettyJson(JSON.stringify({ s: "[".repeat(100) }))).toContain('\n  "s": ');
  });
  test("output over 64 KiB is shown raw", () => {
    const wide = JSON.stringify(Array.from({ length: 9_000 }, () => [[1]]));
    expect(wide.length).toBeLessThan(64 * 1024);
    expect(prettyJson(wide)).toBe(wide);
  });
  test("not JSON: as it is", () => {
    expect(prettyJson("{nope")).toBe("{nope");
  });
});
