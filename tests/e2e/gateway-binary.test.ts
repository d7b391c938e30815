/**
 * The compiled executable (`dist/ath`, from `bun run build`) serves the whole flow: register → authorize → consent
 * at a real oidc-provider → token → proxy → revoke, then stops cleanly on SIGTERM (rebuilt first when older than the
 * sources: tests/helpers/cli-binary.ts).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { call, fullFlow } from "../helpers/agent.ts";
import { expectError } from "../helpers/expect-error.ts";
import { startWorld, type World } from "../helpers/world.ts";

let w: World;

beforeAll(async () => {
  w = await startWorld({ binary: true });
}, 120_000);
afterAll(() => w?.stop());

describe("dist/ath serve", () => {
  test("the compiled binary serves register → authorize → consent → token → proxy → revoke", async () => {
    const f = await fullFlow(w.baseUrl, { provider_id: "mail", scopes: ["openid", "mail:read"], redirectUri: "http://127.0.0.1/callback" });
    expect(f.token.json.effective_scopes).toEqual(["openid", "mail:read"]);
    const headers = { authorization: `Bearer ${f.accessToken}` };
    const ok = await call(`${w.baseUrl}/ath/proxy/mail/v1/messages`, { headers });
    expect(ok.status).toBe(200);
    const revoked = await call(`${w.baseUrl}/ath/revoke`, { form: { token: f.accessToken, ...f.client } });
    expect({ status: revoked.status, body: revoked.json }).toEqual({ status: 200, body: {} });
    expectError(await call(`${w.baseUrl}/ath/proxy/mail/v1/messages`, { headers }), "TOKEN_REVOKED");
  });

  test("SIGTERM stops the compiled gateway with exit code 0", async () => {
    expect(await w.gw.stop("SIGTERM")).toBe(0);
  });
});
