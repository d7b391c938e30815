/** The exchange flow without the CLI: the only pending session is used, and a code is never sent twice. */
import { describe, expect, test } from "bun:test";
import { authorize } from "../../../../src/agent/flows/authorize.ts";
import { exchange } from "../../../../src/agent/flows/exchange.ts";
import { GW, cliFixture, codeFor } from "../../../helpers/cli-harness.ts";

const fx = cliFixture();
const target = { base: GW, native: false };

describe("exchange", () => {
  test("exchanges against the only pending session; the same code again returns the saved token without a request", async () => {
    await fx.registered();
    const agent = await fx.agent();
    const a = await authorize({ target, provider: "github", scopes: ["repo"] }, agent);
    const first = await exchange({ target, code: codeFor(a.ath_session_id) }, agent);
    expect(first).toMatchObject({ already_exchanged: false, response: { provider_id: "github", expires_in: 3600 }, saved: { provider_id: "github" } });
    expect(fx.gw.requests.find((q) => q.path === "/ath/token")!.body.ath_session_id).toBe(a.ath_session_id);
    expect(await fx.pendingIds()).toEqual([]);
    const again = await exchange({ target, code: codeFor(a.ath_session_id) }, agent);
    expect(again).toEqual({ ...first, already_exchanged: true, response: { ...first.response, expires_in: expect.any(Number) } });
    expect(fx.gw.requests.filter((q) => q.path === "/ath/token")).toHaveLength(1);
  });

  test("with no pending session it is NO_PENDING_SESSION (config) and sends nothing", async () => {
    await fx.registered();
    await expect(exchange({ target, code: "ath_code_9" }, await fx.agent())).rejects.toMatchObject({ kind: "config", code: "NO_PENDING_SESSION" });
    expect(fx.gw.requests.some((q) => q.path === "/ath/token")).toBe(false);
  });
});
