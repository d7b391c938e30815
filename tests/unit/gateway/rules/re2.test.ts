/**
 * The linear RE2 matcher behind CEL's `matches` (src/gateway/rules/re2/): RE2's syntax and what it refuses, RE2's
 * semantics (a match anywhere; `$` only at the end of the text without `(?m)`; ASCII `\d \w \s \b`), agreement with
 * JavaScript's RegExp where the two define the same thing, and time linear in the text whatever the pattern.
 */
import { describe, expect, test } from "bun:test";
import { compileRe2, MAX_WORK, Re2SyntaxError, withMatchBudget } from "../../../../src/gateway/rules/re2/match.ts";

const m = (pattern: string, text: string) => compileRe2(pattern).test(text);

describe("RE2's syntax", () => {
  test("what RE2 refuses is refused, with its reason", () => {
    const cases: [string, RegExp][] = [
      ["a**", /bad repetition operator: \*\*/],
      ["a*+", /bad repetition operator: \*\+/],
      ["a{2}{3}", /bad repetition operator: \{2\}\{3\}/],
      ["x{1001}", /bad repetition operator: \{1001\}/],
      ["x{3,2}", /bad repetition operator/],
      ["*a", /missing argument to repetition operator: \*/],
      ["(?=a)", /lookaround is not supported: \(\?=/],
      ["(?!a)", /lookaround is not supported/],
      ["(?<=a)b", /lookaround is not supported/],
      ["(?<!a)b", /lookaround is not supported/],
      ["(a)\\1", /backreferences are not supported: \\1/],
      ["\\Z", /invalid escape sequence: \\Z/],
      ["\\C", /not supported/],
      ["\\q", /invalid escape sequence/],
      ["(a", /missing closing \)/],
      ["a)", /unexpected \)/],
      ["[a", /missing closing \]/],
      ["[z-a]", /invalid character class range: z-a/],
      ["\\pX", /unknown Unicode class/],
      ["(?#c)", /invalid or unsupported group/],
      ["(?x)a", /invalid or unsupported group: \(\?x\)/],
      ["(?i-)a", /invalid or unsupported group flags/],
      ["(".repeat(1001) + ")".repeat(1001), /nested more than 1000 deep/],
      ["(?:a{1000}){1000}", /the pattern is too large/],
    ];
    for (const [pattern, reason] of cases) {
      let err: unknown;
      try {
        compileRe2(pattern);
      } catch (e) {
        err = e;
      }
      expect({ pattern, refused: err instanceof Re2SyntaxError }).toEqual({ pattern, refused: true });
      expect((err as Error).message).toMatch(reason);
    }
  });

  test("what RE2 accepts: groups of every form, flags, classes, escapes, counts, a `{` that opens no count", () => {
    const ok: [string, string, boolean][] = [
      ["(?P<user>\\w+)@(?<host>[a-z.]+)", "bob@example.com", true],
      ["(?:ab)+$", "xabab", true],
      ["(?i)straße", "STRAßE", true],
      ["(?i:a)b", "Ab", true],
      ["(?i:a)b", "AB", false],
      ["a(?i)b|c", "aB", true],
      ["[[:digit:][:upper:]]+$", "A1", true],
      ["[^[:alpha:]]", "abc", false],
      ["[\\d\\-]+", "12-3", true],
      ["[]a]", "]", true],
      ["\\x41\\x{263A}", "A☺", true],
      ["\\Qa.b\\E+", "a.bb", true],
      ["a{,2}", "a{,2}", true],
      ["{", "{", true],
      ["x{2}y?", "xx", true],
      ["\\p{Greek}+$", "αβγ", true],
      ["\\PL", "abc", false],
      ["[\\p{Lu}\\d]", "a", false],
      ["^$", "", true],
      ["a|", "zzz", true],
      ["\\01\\0", "\u0001\u0000", true],
    ];
    for (const [pattern, text, want] of ok) expect({ pattern, text, got: m(pattern, text) }).toEqual({ pattern, text, got: want });
  });
});

describe("RE2's semantics", () => {
  test("^ and $ are the text's ends unless (?m); . is not \\n unless (?s); \\b, \\d, \\w and \\s are ASCII", () => {
    expect(m("a$", "a\n")).toBe(false);
    expect(m("(?m)a$", "a\nb")).toBe(true);
    expect(m("(?m)^b", "a\nb")).toBe(true);
    expect(m("^b", "a\nb")).toBe(false);
    expect(m("\\Aa\\z", "a")).toBe(true);
    expect(m("a.b", "a\nb")).toBe(false);
    expect(m("(?s)a.b", "a\nb")).toBe(true);
    expect(m("\\d", "٣")).toBe(false);
    expect(m("\\w", "é")).toBe(false);
    expect(m("\\bé", " é")).toBe(false); // é is not an ASCII word character: no boundary before it
    expect(m("\\Bx\\B", "axb")).toBe(true);
  });

  test("agrees with JavaScript's RegExp where both define the same language", () => {
    const patterns = ["a+b", "(a|b)*c", "^(a+)+$", "[a-c]+d", "x{2,3}", "^x{2,}$", "\\bfoo\\b", "colou?r", "^[a-z0-9._%+-]+@[a-z0-9.-]+\\.[a-z]{2,}", "(ab|a)(bc|c)", "[^abc]+", "a.c", "(?:x|xy)z"];
    const texts = ["", "a", "ab", "aab", "abc", "aaaa", "aaaa!", "xx", "xxx", "xxxx", "foo bar", "foobar", "colour", "color", "alice@example.com", "abcd", "xyz", "xz", "a.c", "dd"];
    for (const p of patterns) {
      const js = new RegExp(p);
      for (const t of texts) expect({ p, t, re2: m(p, t) }).toEqual({ p, t, re2: js.test(t) });
    }
  });

  test("code points, not UTF-16 units: . takes an astral character whole", () => {
    expect(m("^.$", "😀")).toBe(true);
    expect(m("^..$", "😀")).toBe(false);
    expect(m("^[😀-😂]$", "😁")).toBe(true);
  });
});

describe("linear time", () => {
  test("backtracking patterns against long texts are decided in one pass (a bound: backtracking needs 2^n steps)", () => {
    const started = performance.now();
    expect(m("^(a+)+$", `${"a".repeat(100_000)}!`)).toBe(false);
    expect(m("^(a|aa)*$", `${"a".repeat(100_000)}!`)).toBe(false);
    expect(m(".*.*.*x", "a".repeat(100_000))).toBe(false);
    expect(m("(x+x+)+y", "x".repeat(100_000))).toBe(false);
    expect(performance.now() - started).toBeLessThan(5000);
  });

  test("work past the budget fails instead of running on; one budget spans every match of an evaluation", () => {
    let text = "";
    let seed = 7;
    for (let i = 0; i < 1 << 20; i++) {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      text += seed & 0x10000 ? "a" : "b";
    }
    expect(() => m("(a|b)*a(a|b){20}c", text)).toThrow(`matching needs more than ${MAX_WORK} steps`);
    const cheap = compileRe2("^a");
    const long = "a".repeat(600_000);
    expect(cheap.test(long)).toBe(true); // alone: within its own budget
    // every call inside one budget draws on it: a pattern scanning 600,000 code points four times spends 2.4 million
    const scan = compileRe2("b$");
    expect(() => withMatchBudget(() => [1, 2, 3, 4].map(() => scan.test(long)))).toThrow(/matching needs more than/);
  });
});
