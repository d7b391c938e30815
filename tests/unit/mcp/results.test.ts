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

  test("SCOPE_NOT_APPROVED names the scope needed and the ath_authorize call for it; authorize's names the unapproved ones", () => {
    const proxy = new ClientError("refused", "SCOPE_NOT_APPROVED", "x", { status: 403, details: { scopes: ["mail:read"], needed_scopes: ["mail:send"] } });
    expect(failed(proxy, { provider: "mail" }).content).toEqual([
      { type: "text", text: 'SCOPE_NOT_APPROVED: x\nNext: this request needs the scope mail:send, which the token lacks: call ath_authorize {"provider":"mail","scopes":["mail:read","mail:send"]} for a token with it (the person consents again)' },
    ]);
    const authorize = new ClientError("refused", "SCOPE_NOT_APPROVED", "y", { status: 403, details: { provider_id: "mail", unapproved_scopes: ["mail:admin"] } });
    expect(JSON.stringify(failed(authorize, { provider: "mail" }).content)).toContain("not approved for mail:admin at mail: call ath_authorize without them");
  });

  test("UNKNOWN_PROVIDER sends the model to ath_providers, not to authorize it", () => {
    const text = JSON.stringify(failed(new ClientError("config", "UNKNOWN_PROVIDER", "no such"), { provider: "nope" }).content);
    expect(text).toContain("call ath_providers");
    expect(text).not.toContain("ath_authorize");
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
