/** RFC 8785's own examples, and what JCS refuses. */
import { describe, expect, test } from "bun:test";
import { canonicalize } from "../../../src/protocol/jcs.ts";

describe("canonicalize (RFC 8785)", () => {
  test("the RFC's §3.2.2 example: numbers, escapes, literals, sorted members", () => {
    const input = JSON.parse(
      '{"numbers":[333333333.33333329,1E30,4.50,2e-3,0.000000000000000000000000001],"string":"\\u20ac$\\u000F\\u000aA\'\\u0042\\u0022\\u005c\\\\\\"\\/","literals":[null,true,false]}',
    );
    expect(canonicalize(input)).toBe(
      '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}',
    );
  });

  test("the RFC's §3.2.3 example: members sorted by UTF-16 code units", () => {
    const input = { "\u20ac": "Euro Sign", "\r": "Carriage Return", "\ufb33": "Hebrew Letter Dalet With Dagesh", "1": "One", "\ud83d\ude00": "Emoji: Grinning Face", "\u0080": "Control", "\u00f6": "Latin Small Letter O With Diaeresis" };
    // (read back in order from the text: an object would put the integer-like "1" first again)
    expect([...canonicalize(input).matchAll(/:"([^"]*)"/g)].map((m) => m[1])).toEqual([
      "Carriage Return", "One", "Control", "Latin Small Letter O With Diaeresis", "Euro Sign", "Emoji: Grinning Face", "Hebrew Letter Dalet With Dagesh",
    ]);
  });

  test("nested objects sort at every level; no whitespace; undefined members dropped; -0 is 0", () => {
    expect(canonicalize({ b: [{ z: 1, a: { y: null, x: -0 } }], a: "s", c: undefined })).toBe('{"a":"s","b":[{"a":{"x":0,"y":null},"z":1}]}');
  });

  test("values JSON cannot carry are refused", () => {
    expect(() => canonicalize({ n: NaN })).toThrow(TypeError);
    expect(() => canonicalize([Infinity])).toThrow(TypeError);
    expect(() => canonicalize([undefined])).toThrow(TypeError);
    expect(() => canonicalize({ f: () => 1 })).toThrow(TypeError);
    expect(() => canonicalize(1n)).toThrow(TypeError);
  });
});

describe("objects written in one JSON.stringify (keys already in order, primitive values)", () => {
  /** RFC 8785 the long way: every object's keys sorted, every member written on its own. */
  const reference = (v: unknown): string => {
    if (v === null || typeof v !== "object") return JSON.stringify(v);
    if (Array.isArray(v)) return `[${v.map(reference).join(",")}]`;
    const o = v as Record<string, unknown>;
    const names = Object.keys(o).filter((k) => o[k] !== undefined).sort();
    return `{${names.map((k) => `${JSON.stringify(k)}:${reference(o[k])}`).join(",")}}`;
  };
  const KEYS = ["at", "method", "path", "status", "request_digest", "a", "B", "é", "ü", "\u{1F600}", "\u20ac", "1", "10", "9", "", "a b", "__proto__x"];
  const VALUES: unknown[] = ["", "x", "é\u0000\n\"\\", "\u2028", "\u{1F600}", "\ud800", 0, -0, 1, -1.5, 1e21, 1e-7, 2 ** 53 + 2, true, false, null, undefined];
  let seed = 7;
  const rand = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % n);

  test("equal to the long way on 3,000 random flat objects, keys in order or not", () => {
    for (let i = 0; i < 3000; i++) {
      const o: Record<string, unknown> = {};
      const keys = [...new Set(Array.from({ length: rand(6) }, () => KEYS[rand(KEYS.length)]!))];
      if (rand(2) === 0) keys.sort();
      for (const k of keys) o[k] = VALUES[rand(VALUES.length)];
      expect(canonicalize(o)).toBe(reference(o));
      expect(canonicalize([o, { calls: [o, o] }])).toBe(reference([o, { calls: [o, o] }]));
    }
  });

  test("what JSON.stringify would write differently still takes the long way", () => {
    expect(canonicalize({ b: 1, a: 2 })).toBe('{"a":2,"b":1}');
    expect(canonicalize({ "9": 1, "10": 2 })).toBe('{"10":2,"9":1}');
    expect(() => canonicalize({ a: Number.NaN })).toThrow(TypeError);
    expect(() => canonicalize({ a: Infinity })).toThrow(TypeError);
    expect(() => canonicalize({ a: 1n })).toThrow(TypeError);
    expect(canonicalize({ a: { toJSON: () => "x" } })).toBe('{"a":"x"}');
  });
});
