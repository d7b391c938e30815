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
