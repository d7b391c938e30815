/** The request view's faithful-JSON rule (DESIGN §16): a formatted view only when it cannot mislead. */
import { describe, expect, test } from "bun:test";
import { faithfulJson, renderRequestView, visible } from "../../../../src/gateway/pages/request-view.ts";

describe("faithfulJson", () => {
  test("formats from the source's own tokens when faithful; warns on duplicates, inexact numbers, depth, size; null when not JSON", () => {
    expect(faithfulJson('{"a":1e2,"b":[true,null,"x\\u0041"]}')).toEqual({ formatted: '{\n  "a": 1e2,\n  "b": [\n    true,\n    null,\n    "x\\u0041"\n  ]\n}' });
    expect(faithfulJson('{"to":1,"t\\u006f":2}')).toEqual({ warning: "duplicate key `to`: the service may read either value" });
    expect(faithfulJson("[90071992547409931]")).toEqual({ warning: "the number 90071992547409931 has no exact JSON reading: the service may read another value" });
    expect(faithfulJson("[9007199254740992]")).toEqual({ formatted: "[\n  9007199254740992\n]" });
    expect(faithfulJson("[1e400]")).toHaveProperty("warning");
    expect(faithfulJson("[0.1234567890123456789]")).toHaveProperty("warning");
    expect(faithfulJson("[".repeat(33) + "]".repeat(33))).toEqual({ warning: "nested deeper than 32 levels" });
    expect(faithfulJson("[".repeat(32) + "]".repeat(32))).toHaveProperty("formatted");
    expect(faithfulJson(JSON.stringify(Array.from({ length: 20_000 }, (_, i) => i)))).toEqual({ warning: "formatted it would be over 64 KiB" });
    for (const notJson of ["", "{", '{"a":1,}', "[01]", "NaN", '"a\u0001"', "{} x"]) expect(faithfulJson(notJson)).toBeNull();
  });

  test("invisible characters are shown as code points", () => {
    expect(visible("a\u202Eb\u200Bc\u0007d\te")).toBe("a⟨U+202E⟩b⟨U+200B⟩c⟨U+0007⟩d\te");
    const html = renderRequestView({ method: "POST", path: "/a%20b", query: "x=%3Cs%3E", headers: { "x-arg": "<b>" }, body: { shown: new TextEncoder().encode("<i>\u202E</i>"), bytes: 9, contentType: null } });
    expect(html).toContain("&lt;i&gt;⟨U+202E⟩&lt;/i&gt;");
    expect(html).toContain("x-arg: &lt;b&gt;");
    expect(html).toContain("x = &lt;s&gt;");
    expect(html).not.toContain("<i>");
  });
});
