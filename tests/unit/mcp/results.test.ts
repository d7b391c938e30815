/** mcp/results.ts: every failure is a tool result carrying its code; the text names the next tool to call. */
import { describe, expect, test } from "bun:test";
import { ClientError } from "../../../src/agent/errors.ts";
import { ERROR_META, failed, ok } from "../../../src/mcp/results.ts";

describe("tool results", () => {
  test("ok: structuredContent and the summary as text", () => {
    expect(ok({ a: 1 }, "one")).toEqual({ structuredContent: { a: 1 }, content: [{ type: "text", text: "one" }] });
  });

  test("a ClientError keeps its code, status and details; the text starts with the code and names the next step", () => {
    const e = new ClientError("refused", "TOKEN_REVOKED", "[GET] x: 401 TOKEN_REVOKED — revoked", { status: 401, details: { provider_id: "mail" } });
    const r = failed(e, { provider: "mail" });
    expect(r.isError).toBe(true);
    expect(r._meta?.[ERROR_META]).toEqual({ code: "TOKEN_REVOKED", message: e.message, status: 401, details: { provider_id: "mail" } });
    expect(r.content).toEqual([{ type: "text", text: `TOKEN_REVOKED: ${e.message}\nNext: call ath_authorize {"provider":"mail"} for a new token` }]);
    expect(r.structuredContent).toBeUndefined(); // a host checks structuredContent against the output schema
  });

  test("anything else is ERROR with its message and nothing more (no stack, no cause)", () => {
    for (const e of [new TypeError("boom"), "plain", { message: "object" }]) {
      const r = failed(e);
      const meta = r._meta?.[ERROR_META] as Record<string, unknown>;
      expect(Object.keys(meta)).toEqual(["code", "message"]);
      expect(meta.code).toBe("ERROR");
      expect(JSON.stringify(r)).not.toContain("at ");
    }
  });
});
