/**
 * Upstream token lifecycle at the proxy (issue 5, DESIGN §3 "Proxy", §8) through a real `ath serve` and a real
 * oidc-provider with rotating refresh tokens: refresh after expiry, single-flight under 20 concurrent calls, the
 * rotated refresh token used next time, and a refused refresh killing the grant without further provider calls.
 *
 * Upstream access tokens live 33 s, so with the 30 s refresh margin they count as expired 3 s after issue: one
 * wait after the flows makes every grant stale, and a freshly refreshed token stays usable for 3 s. A second world
 * whose tokens live 20 s (always inside the margin) shows every call refreshing first.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { call, fullFlow } from "../helpers/agent.ts";
import { expectError } from "../helpers/expect-error.ts";
import { countRows, eventually, presentRefreshToken, providerRefreshes, startRecorder, type Recorder } from "../helpers/lifecycle.ts";
import { MAIL_SCOPES, startWorld, type World } from "../helpers/world.ts";

const ACCESS_TTL_S = 33;
const STALE_AFTER_MS = (ACCESS_TTL_S - 30) * 1000 + 150;

let w: World;
let recorder: Recorder;
type Flow = Awaited<ReturnType<typeof fullFlow>> & { refreshToken: string };
let single: Flow;
let crowd: Flow;
let rotating: Flow;
let revoked: Flow;

/** A flow on `rot` plus the refresh token the provider issued at its code exchange (seen by the recorder). */
async function flow(): Promise<Flow> {
  const f = await fullFlow(w.baseUrl, { provider_id: "rot", scopes: ["mail:read"] });
  const exchange = recorder.calls.filter((c) => c.form.grant_type === "authorization_code").at(-1);
  const refreshToken = exchange?.response?.refresh_token;
  if (typeof refreshToken !== "string") throw new Error("the code exchange returned no refresh token");
  return { ...f, refreshToken };
}

const get = (f: Flow) => call(`${w.baseUrl}/ath/proxy/rot/v1/messages`, { headers: { authorization: `Bearer ${f.accessToken}` } });
const refreshesWith = (refreshToken: string) => recorder.refreshes().filter((c) => c.form.refresh_token === refreshToken);

beforeAll(async () => {
  recorder = startRecorder();
  w = await startWorld({
    accessTokenTtl: ACCESS_TTL_S,
    providers: (auth, api) => {
      recorder.forward({ token: auth.tokenEndpoint, revocation: auth.revocationEndpoint });
      return {
        rot: {
          display_name: "Rotating refresh",
          available_scopes: MAIL_SCOPES,
          authorize_endpoint: auth.authorizeEndpoint,
          token_endpoint: `${recorder.url}/token`,
          api_base_url: api.baseUrl,
          client_id: auth.postClient.client_id,
          client_secret: auth.postClient.client_secret,
        },
      };
    },
  });
  single = await flow();
  crowd = await flow();
  rotating = await flow();
  revoked = await flow();
  await Bun.sleep(STALE_AFTER_MS);
}, 30_000);
afterAll(async () => {
  await w?.stop();
  await recorder?.stop();
});

describe("Upstream refresh — after expiry", () => {
  test("a proxy call after the upstream access token expired succeeds, and the provider saw exactly one refresh grant", async () => {
    const before = providerRefreshes(w.auth);
    const accepted = w.api.accepted().length;
    const r = await get(single);
    expect(r.status).toBe(200);
    expect(providerRefreshes(w.auth)).toEqual({ granted: before.granted + 1, refused: before.refused });
    expect(refreshesWith(single.refreshToken)).toHaveLength(1);
    // the API accepted the call with the refreshed token (it introspects every bearer token at the provider)
    expect(w.api.accepted().length).toBe(accepted + 1);

    // the refreshed token is fresh: the next call uses it without another refresh
    expect((await get(single)).status).toBe(200);
    expect(providerRefreshes(w.auth).granted).toBe(before.granted + 1);
  });

  test("20 concurrent proxy calls after expiry trigger exactly one refresh grant, and all 20 succeed", async () => {
    const before = providerRefreshes(w.auth);
    const accepted = w.api.accepted().length;
    const results = await Promise.all(Array.from({ length: 20 }, () => get(crowd)));
    const statuses = results.map((r) => r.status);
    const granted = providerRefreshes(w.auth).granted - before.granted;
    console.info(`[lifecycle] 20 concurrent calls after expiry: ${statuses.filter((s) => s === 200).length} × 200, ${granted} refresh grant(s) at the provider`);
    expect(statuses).toEqual(Array.from({ length: 20 }, () => 200));
    expect(granted).toBe(1);
    expect(providerRefreshes(w.auth).refused).toBe(before.refused);
    expect(refreshesWith(crowd.refreshToken)).toHaveLength(1);
    expect(w.api.accepted().length).toBe(accepted + 20);
  });
});

describe("Upstream refresh — rotation", () => {
  test("the rotated refresh token is used next time; the old one is refused by the provider if reused", async () => {
    expect((await get(rotating)).status).toBe(200);
    const [first] = refreshesWith(rotating.refreshToken);
    const rotated = first?.response?.refresh_token;
    expect(typeof rotated).toBe("string");
    expect(rotated).not.toBe(rotating.refreshToken);

    await Bun.sleep(STALE_AFTER_MS);
    const refused = providerRefreshes(w.auth).refused;
    expect((await get(rotating)).status).toBe(200);
    // the second refresh presented the rotated token, never the first one again
    expect(refreshesWith(String(rotated))).toHaveLength(1);
    expect(refreshesWith(rotating.refreshToken)).toHaveLength(1);
    expect(refreshesWith(String(rotated))[0]?.status).toBe(200);
    expect(providerRefreshes(w.auth).refused).toBe(refused);

    // the first refresh token was consumed at the provider: presenting it again is invalid_grant
    expect(await presentRefreshToken(w.auth, rotating.refreshToken)).toEqual({ status: 400, error: "invalid_grant" });
   }, 15_000);

  test("after the provider revokes the grant for refresh-token reuse, the proxy answers upstream_grant_revoked", async () => {
    // the reuse above made oidc-provider revoke the whole grant: the current access token is no longer active,
    // the API answers 401, the gateway refreshes once, and the provider refuses.
    const r = await get(rotating);
    expectError(r, "TOKEN_EXPIRED", { reason: "upstream_grant_revoked" });
  });
});

describe("Upstream refresh — a grant the provider refuses", () => {
  test("a revoked refresh token answers 401 TOKEN_EXPIRED (upstream_grant_revoked) and the provider is not called again", async () => {
    const revocation = await fetch(w.auth.revocationEndpoint, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ token: revoked.refreshToken, token_type_hint: "refresh_token", ...w.auth.postClient }).toString(),
    });
    expect(revocation.status).toBe(200);
    const db = join(w.gw.dataDir, "ath.db");
    // audit events reach the store in batches (ops/audit-queue.ts): the test above left one on its way; let it land
    await eventually("the earlier refused refresh to be audited", () => countRows(db).audit("upstream.refresh_refused") >= 1);
    const auditBefore = countRows(db).audit("upstream.refresh_refused");
    const before = providerRefreshes(w.auth);
    const apiBefore = w.api.requests.length;

    const first = await get(revoked);
    const error = expectError(first, "TOKEN_EXPIRED", { reason: "upstream_grant_revoked" });
    expect(error.message).toContain("authorize again");
    expect(providerRefreshes(w.auth)).toEqual({ granted: before.granted, refused: before.refused + 1 });

    for (let i = 0; i < 3; i++) {
      expectError(await get(revoked), "TOKEN_EXPIRED", { reason: "upstream_grant_revoked" });
    }
    // no refresh loop: one refused refresh in all, nothing forwarded to the API
    expect(providerRefreshes(w.auth)).toEqual({ granted: before.granted, refused: before.refused + 1 });
    expect(refreshesWith(revoked.refreshToken)).toHaveLength(1);
    expect(w.api.requests.length).toBe(apiBefore);
    // wait for this one, then check it is the only one
    await eventually("the refused refresh to be audited", () => countRows(db).audit("upstream.refresh_refused") > auditBefore);
    expect(countRows(db).audit("upstream.refresh_refused")).toBe(auditBefore + 1);
  });
});

describe("Upstream refresh — within the 30 s margin (a second gateway whose upstream access tokens live 20 s)", () => {
  let near: World;
  beforeAll(async () => {
    near = await startWorld({ accessTokenTtl: 20 });
  });
  afterAll(() => near?.stop());

  const refreshes = () => near.auth.count("grant.success:refresh_token");

  test("each call with a near-expiry upstream token refreshes first, and the rotated refresh token keeps working", async () => {
    const flow = await fullFlow(near.baseUrl, { provider_id: "mail", scopes: ["mail:read"] });
    const headers = { authorization: `Bearer ${flow.accessToken}` };
    const start = refreshes();
    for (let i = 1; i <= 3; i++) {
      const r = await call(`${near.baseUrl}/ath/proxy/mail/v1/messages`, { headers });
      expect(r.status).toBe(200);
      expect(refreshes()).toBe(start + i);
    }
    // a refresh token reused after rotation would have been refused (and the grant revoked) by oidc-provider
    expect(near.auth.count("grant.error:refresh_token")).toBe(0);
  });

  test("concurrent calls share the refresh: all succeed and the grant survives", async () => {
    const flow = await fullFlow(near.baseUrl, { provider_id: "mailrules", scopes: ["mail:read"] });
    const headers = { authorization: `Bearer ${flow.accessToken}` };
    const results = await Promise.all(Array.from({ length: 6 }, () => call(`${near.baseUrl}/ath/proxy/mailrules/v1/messages`, { headers })));
    expect(results.map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 200]);
    expect(near.auth.count("grant.error:refresh_token")).toBe(0);
    expect((await call(`${near.baseUrl}/ath/proxy/mailrules/v1/messages`, { headers })).status).toBe(200);
  });

  test("a refresh the provider refuses answers 401 TOKEN_EXPIRED with reason upstream_grant_revoked", async () => {
    const flow = await fullFlow(near.baseUrl, { provider_id: "mail", scopes: ["mail:read"] });
    await near.auth.revokeAllGrants();
    const before = near.api.accepted().length;
    const r = await call(`${near.baseUrl}/ath/proxy/mail/v1/messages`, { headers: { authorization: `Bearer ${flow.accessToken}` } });
    expectError(r, "TOKEN_EXPIRED", { reason: "upstream_grant_revoked" });
    expect(near.api.accepted().length).toBe(before);
  });
});
