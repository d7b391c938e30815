/** The exchange flow without the CLI, against the real gateway in process: the only pending session is used, and a code is never sent twice. */
import { describe, expect, test } from "bun:test";
import { authorize } from "../../../../src/agent/flows/authorize.ts";
import { exchange } from "../../../../src/agent/flows/exchange.ts";
import { GATEWAY as GW, cliOnGateway, githubAndGitlab } from "../../../helpers/cli-in-process.ts";

const fx = cliOnGateway({ scripted: githubAndGitlab, provider: "github", scopes: "repo,read:user" });
const target = { base: GW, native: false };

describe("exchange", () => {
  test("exchanges against the only pending session; the same code again returns the saved token without a request", async () => {
    await fx.registered();
    const agent = await fx.agent();
    const a = await authorize({ target, provider: "github", scopes: ["repo"] }, agent);
    const code = await fx.consent(a.authorization_url);
    const first = await exchange({ target, code }, agent);
    expect(first).toMatchObject({ already_exchanged: false, response: { provider_id: "github", expires_in: 3600 }, saved: { provider_id: "github" } });
    expect(fx.sent.find((q) => q.path === "/ath/token")!.body.ath_session_id).toBe(a.ath_session_id);
    expect(await fx.pendingIds()).toEqual([]);
    const again = await exchange({ target, code }, agent);
    // the saved token's response, its refresh token included: a re-run answers what the lost first answer said
    const { refresh_token, refresh_expires_in } = first.response as typeof first.response & { refresh_token?: string; refresh_expires_in?: number };
    expect(refresh_token).toMatch(/^ath_rt_/);
    expect(refresh_expires_in).toBeGreaterThan(0);
    expect(again).toEqual({ ...first, already_exchanged: true, response: { ...first.response, expires_in: expect.any(Number), refresh_expires_in: expect.any(Number) } });
    expect(fx.sent.filter((q) => q.path === "/ath/token")).toHaveLength(1);
  });

  test("with no pending session it is NO_PENDING_SESSION (config) and sends nothing", async () => {
    await fx.registered();
    await expect(exchange({ target, code: "ath_code_9" }, await fx.agent())).rejects.toMatchObject({ kind: "config", code: "NO_PENDING_SESSION" });
    expect(fx.sent.some((q) => q.path === "/ath/token")).toBe(false);
  });
});
