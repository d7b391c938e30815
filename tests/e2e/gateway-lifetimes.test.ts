/**
 * Lifetimes (DESIGN §3 "Proxy", §8): sessions expire after `--session-ttl`; ATH tokens after `--token-ttl`; upstream access tokens
 * within 30 s of expiry are refreshed once, single-flight, with the rotated refresh token stored; a refresh the
 * provider refuses kills the grant (401 TOKEN_EXPIRED, reason upstream_grant_revoked).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { authorize, call, consent, exchange, fullFlow, register } from "../helpers/agent.ts";
import { makeAgent } from "../helpers/attestations.ts";
import { randomString } from "../helpers/net.ts";
import { expectError } from "../helpers/expect-error.ts";
import { startWorld, type World } from "../helpers/world.ts";

describe("Proxy — upstream refresh (upstream access tokens live 20 s, inside the 30 s margin)", () => {
  let w: World;
  beforeAll(async () => {
    w = await startWorld({ accessTokenTtl: 20 });
  });
  afterAll(() => w?.stop());

  const refreshes = () => w.auth.count("grant.success:refresh_token");

  test("each call with a near-expiry upstream token refreshes first, and the rotated refresh token keeps working", async () => {
    const flow = await fullFlow(w.baseUrl, { provider_id: "mail", scopes: ["mail:read"] });
    const headers = { authorization: `Bearer ${flow.accessToken}` };
    const start = refreshes();
    for (let i = 1; i <= 3; i++) {
      const r = await call(`${w.baseUrl}/ath/proxy/mail/v1/messages`, { headers });
      expect(r.status).toBe(200);
      expect(refreshes()).toBe(start + i);
    }
    // a refresh token reused after rotation would have been refused (and the grant revoked) by oidc-provider
    expect(w.auth.count("grant.error:refresh_token")).toBe(0);
  });

  test("concurrent calls share the refresh: all succeed and the grant survives", async () => {
    const flow = await fullFlow(w.baseUrl, { provider_id: "mailrules", scopes: ["mail:read"] });
    const headers = { authorization: `Bearer ${flow.accessToken}` };
    const results = await Promise.all(Array.from({ length: 6 }, () => call(`${w.baseUrl}/ath/proxy/mailrules/v1/messages`, { headers })));
    expect(results.map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 200]);
    expect(w.auth.count("grant.error:refresh_token")).toBe(0);
    expect((await call(`${w.baseUrl}/ath/proxy/mailrules/v1/messages`, { headers })).status).toBe(200);
  });

  test("a refresh the provider refuses answers 401 TOKEN_EXPIRED with reason upstream_grant_revoked", async () => {
    const flow = await fullFlow(w.baseUrl, { provider_id: "mail", scopes: ["mail:read"] });
    await w.auth.revokeAllGrants();
    const before = w.api.accepted().length;
    const r = await call(`${w.baseUrl}/ath/proxy/mail/v1/messages`, { headers: { authorization: `Bearer ${flow.accessToken}` } });
    expectError(r, "TOKEN_EXPIRED", { reason: "upstream_grant_revoked" });
    expect(w.api.accepted().length).toBe(before);
  });
});

describe("Proxy — ATH token lifetime (--token-ttl 2)", () => {
  let w: World;
  beforeAll(async () => {
    w = await startWorld({ extraArgs: ["--token-ttl", "2"] });
  });
  afterAll(() => w?.stop());

  test("a token past its expires_in is refused with 401 TOKEN_EXPIRED and nothing is forwarded", async () => {
    const flow = await fullFlow(w.baseUrl, { provider_id: "mail", scopes: ["mail:read"] });
    expect(flow.token.json.expires_in).toBe(2);
    await Bun.sleep(3000);
    const before = w.api.requests.length;
    const r = await call(`${w.baseUrl}/ath/proxy/mail/v1/messages`, { headers: { authorization: `Bearer ${flow.accessToken}` } });
    expectError(r, "TOKEN_EXPIRED");
    expect(w.api.requests.length).toBe(before);
  });
});

describe("Phase B — session lifetime (--session-ttl 1)", () => {
  let w: World;
  beforeAll(async () => {
    w = await startWorld({ extraArgs: ["--session-ttl", "1"] });
  });
  afterAll(() => w?.stop());

  test("an expired session yields no code at consent and 400 SESSION_EXPIRED at /ath/token", async () => {
    const agent = await makeAgent();
    const reg = await register(w.baseUrl, agent, { providers: [{ provider_id: "mail", scopes: ["mail:read"] }] });
    const client = { client_id: String(reg.json.client_id), client_secret: String(reg.json.client_secret) };
    const a = await authorize(w.baseUrl, agent, client, { provider_id: "mail", scopes: ["mail:read"] });
    expect(a.status).toBe(200);
    await Bun.sleep(2000);
    const grantsBefore = w.auth.count("grant.success:authorization_code");
    const c = await consent(String(a.json.authorization_url));
    expect(c.code).toBeUndefined();
    expect(c.page.status).toBeGreaterThanOrEqual(400);
    expect(w.auth.count("grant.success:authorization_code")).toBe(grantsBefore);
    const t = await exchange(w.baseUrl, agent, client, { code: `ath_code_${randomString()}`, ath_session_id: String(a.json.ath_session_id) });
    expectError(t, "SESSION_EXPIRED");
  });
});
