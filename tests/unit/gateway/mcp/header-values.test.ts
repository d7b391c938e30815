/**
 * The pure parts of the 2026 wire's headers (DESIGN §21): the spec's `=?base64?…?=` value encoding both ways, and which
 * `x-mcp-header` declarations of a tool's inputSchema count (only properties reached through `properties`, primitive
 * types, RFC 9110 tokens unique regardless of case — a schema breaking a rule has none).
 */
import { describe, expect, test } from "bun:test";
import { decodeHeaderValue, encodeHeaderValue } from "../../../../src/gateway/mcp/headers.ts";
import { declarationsOf } from "../../../../src/gateway/mcp/tool-schemas.ts";

describe("header values", () => {
  test("plain visible ASCII is sent as is; anything else — non-ASCII, control characters, edge whitespace, empty, a look-alike sentinel — as =?base64?…?=, and decodes back", () => {
    expect(encodeHeaderValue("us-west1")).toBe("us-west1");
    for (const v of ["ünïcode", "a\nb", " lead", "trail ", "", "=?base64?abc?=", "日本"]) {
      const sent = encodeHeaderValue(v);
      expect(sent).toStartWith("=?base64?");
      expect(decodeHeaderValue(sent)).toBe(v);
    }
  });

  test("decoding: without the exact sentinel a value is literal; a sentinel whose payload is not canonical base64 or not UTF-8 is refused (undefined)", () => {
    expect(decodeHeaderValue("SGVsbG8=")).toBe("SGVsbG8=");
    expect(decodeHeaderValue("=?base64?SGVsbG8=")).toBe("=?base64?SGVsbG8=");
    expect(decodeHeaderValue("=?base64?SGVsbG8=?=")).toBe("Hello");
    expect(decodeHeaderValue("  =?base64?SGVsbG8=?=  ")).toBe("Hello");
    for (const bad of ["=?base64?SGVsbG8?=", "=?base64?SGVs!!!bG8=?=", "=?base64?/w==?=", "=?base64?SGVsbG8==?="]) expect(decodeHeaderValue(bad)).toBeUndefined();
  });
});

describe("x-mcp-header declarations", () => {
  test("properties at any depth through `properties`, primitive types only", () => {
    const schema = {
      type: "object",
      properties: {
        region: { type: "string", "x-mcp-header": "Region" },
        limits: { type: "object", properties: { max: { type: "integer", "x-mcp-header": "Max" } } },
        flag: { type: "boolean", "x-mcp-header": "Flag" },
        plain: { type: "string" },
      },
    };
    expect(declarationsOf(schema)).toEqual([
      { path: ["region"], header: "Region", type: "string" },
      { path: ["limits", "max"], header: "Max", type: "integer" },
      { path: ["flag"], header: "Flag", type: "boolean" },
    ]);
  });

  test("a schema breaking a rule has no declarations: under items/anyOf/$defs, an object type, a name that is not a token, a duplicate in another case", () => {
    const bad = [
      { type: "object", properties: { list: { type: "array", items: { type: "string", "x-mcp-header": "Item" } } } },
      { type: "object", anyOf: [{ properties: { a: { type: "string", "x-mcp-header": "A" } } }] },
      { type: "object", $defs: { d: { type: "string", "x-mcp-header": "D" } }, properties: { ok: { type: "string", "x-mcp-header": "Ok" } } },
      { type: "object", properties: { o: { type: "object", "x-mcp-header": "O" } } },
      { type: "object", properties: { s: { type: "string", "x-mcp-header": "Has Space" } } },
      { type: "object", properties: { a: { type: "string", "x-mcp-header": "Same" }, b: { type: "string", "x-mcp-header": "same" } } },
      { type: "string", "x-mcp-header": "Root" },
    ];
    for (const schema of bad) expect(declarationsOf(schema)).toEqual([]);
    expect(declarationsOf(undefined)).toEqual([]);
  });
});
