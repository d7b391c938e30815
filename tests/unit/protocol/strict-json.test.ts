/**
 * JSON read strictly (src/protocol/strict-json.ts): a name twice in one object is refused wherever it is — nested,
 * in an array's objects, written with escapes — while equal names in different objects, and strings that look like
 * names, are not; the work is one pass, constant per name.
 */
import { describe, expect, test } from "bun:test";
import { firstDuplicateName, parseStrictJson } from "../../../src/protocol/strict-json.ts";

describe("a name twice in one object", () => {
  test("is found at any depth, and however it is escaped", () => {
    const cases: [string, string][] = [
      ['{"a":1,"a":2}', "a"],
      ['{"x":{"b":1,"c":{"d":[{"e":1,"e":2}]}}}', "e"],
      ['{"\\u0061":1,"a":2}', "a"],
      ['{"a\\nb":1,"a\\u000ab":2}', "a\nb"],
      ['{"\\"":1,"\\u0022":2}', '"'],
      ['{"\\ud83d\\ude00":1,"😀":2}', "😀"],
      ['{"to":"alice","to":"mallory"}', "to"],
    ];
    for (const [text, name] of cases) expect({ text, dup: firstDuplicateName(text) }).toEqual({ text, dup: name });
  });

  test("equal names in different objects, names in strings, and escaped backslashes are not duplicates", () => {
    for (const text of ['[{"a":1},{"a":1}]', '{"a":{"a":{"a":1}}}', '{"a":"\\"a\\":1","b":"}{"}', '{"a\\\\":1,"a\\\\\\\\":2}', '{"k":[1,{"k":2}],"j":3}']) {
      expect({ text, dup: firstDuplicateName(text) }).toEqual({ text, dup: null });
    }
  });

  test("parseStrictJson: the value, or why not (not JSON; a name twice)", () => {
    expect(parseStrictJson('{"a":[1,2]}')).toEqual({ ok: true, value: { a: [1, 2] } });
    expect(parseStrictJson('{"a":1,')).toMatchObject({ ok: false, reason: expect.stringContaining("not JSON") });
    expect(parseStrictJson('{"type":"x","type":"y"}')).toEqual({ ok: false, reason: 'the name "type" appears twice in one object' });
  });

  test("60,000 names, escaped or not, are one pass (a bound, not a speed)", () => {
    const wide = JSON.stringify(Object.fromEntries(Array.from({ length: 60_000 }, (_, i) => [`k\n${i}é`, i])));
    const started = performance.now();
    expect(firstDuplicateName(wide)).toBeNull();
    expect(firstDuplicateName(wide.replace(/}$/, ',"k\\n0é":1}'))).toBe("k\n0é");
    expect(performance.now() - started).toBeLessThan(5000);
  });
});
