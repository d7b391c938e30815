/**
 * Strict JSON (src/gateway/rules/strict-json.ts; issue 35, "one body model"): a body is read only as every JSON reader
 * reads it — UTF-8, no byte-order mark, one JSON text, no key twice, at most 32 deep — and the members of the outer
 * objects are found where they sit in the text, so an approval binds the bytes as sent.
 */
import { describe, expect, test } from "bun:test";
import { readStrictJson, readStrictText, spanOf, UnreadableJson } from "../../../../src/gateway/rules/strict-json.ts";

const bytes = (t: string) => new TextEncoder().encode(t);

describe("what is read", () => {
  test("one JSON text of any kind, as JSON.parse reads it", () => {
    for (const text of ['{"a":1}', "[1,2]", '"x"', "42", "true", "null", ' { "a" : [ {"b": "c\\"d"} ] } ']) {
      expect(readStrictText(text)).toEqual(JSON.parse(text));
    }
  });

  test("the same key in two different objects is no duplicate", () => {
    expect(readStrictText('{"a":{"k":1},"b":{"k":2},"c":[{"k":3},{"k":4}]}')).toEqual({ a: { k: 1 }, b: { k: 2 }, c: [{ k: 3 }, { k: 4 }] });
  });

  test("exactly 32 levels deep is read", () => {
    expect(readStrictText("[".repeat(32) + "]".repeat(32))).toBeDefined();
  });
});

describe("what is unreadable, each with its reason", () => {
  const cases: [string, Uint8Array, RegExp][] = [
    ["a key twice", bytes('{"to":"a","to":"b"}'), /duplicate key "to"/],
    ["a key twice, once escaped", bytes('{"to":"a","\\u0074o":"b"}'), /duplicate key "to"/],
    ["a key twice, deep", bytes('{"a":[{"b":{"c":1,"c":2}}]}'), /duplicate key "c"/],
    ["trailing data", bytes('{"a":1} {"a":2}'), /not one JSON text/],
    ["NDJSON", bytes('{"a":1}\n{"a":2}\n'), /not one JSON text/],
    ["a comment", bytes('{"a":1 /* x */}'), /not one JSON text/],
    ["a trailing comma", bytes('{"a":1,}'), /not one JSON text/],
    ["single quotes", bytes("{'a':1}"), /not one JSON text/],
    ["a byte-order mark", new Uint8Array([0xef, 0xbb, 0xbf, ...bytes('{"a":1}')]), /byte-order mark/],
    ["UTF-16", new Uint8Array([0xff, 0xfe, 0x7b, 0x00, 0x7d, 0x00]), /not UTF-8|not one JSON text/],
    ["an invalid UTF-8 byte", new Uint8Array([...bytes('{"a":"'), 0xc3, 0x28, ...bytes('"}')]), /not UTF-8/],
    ["33 levels", bytes("[".repeat(33) + "]".repeat(33)), /deeper than 32/],
  ];
  for (const [name, input, reason] of cases) {
    test(name, () => {
      expect(() => readStrictJson(input)).toThrow(UnreadableJson);
      expect(() => readStrictJson(input)).toThrow(reason);
    });
  }
});

describe("spanOf: where a member sits in the text", () => {
  test("a batch's message, its params, their arguments — objects, strings, numbers as written", () => {
    const text = ' [ {"id":1,"params":{"name":"x","arguments":{"to": "a\\"b", "n":[1,{"z":2}]}}}, {"id":2,"params":{"arguments": 12345678901234567893 }} ] ';
    const v = readStrictText(text) as { params: object }[];
    const slice = (o: object, k: string) => {
      const s = spanOf(o, k)!;
      return text.slice(s[0], s[1]);
    };
    expect(slice(v[0]!.params, "arguments")).toBe('{"to": "a\\"b", "n":[1,{"z":2}]}');
    expect(slice(v[1]!.params, "arguments")).toBe("12345678901234567893");
    expect(slice(v[0]!.params, "name")).toBe('"x"');
    expect(slice(v[0]!, "id")).toBe("1");
  });

  test("a single message (no batch)", () => {
    const text = '{"jsonrpc":"2.0","params":{"arguments":{"a":true}}}';
    const v = readStrictText(text) as { params: object };
    const s = spanOf(v.params, "arguments")!;
    expect(text.slice(s[0], s[1])).toBe('{"a":true}');
  });

  test("members deeper than three levels are not remembered", () => {
    const v = readStrictText('{"a":{"b":{"c":{"d":1}}}}') as { a: { b: { c: object } } };
    expect(spanOf(v.a.b.c, "d")).toBeUndefined();
  });
});
