/**
 * Two `ath serve` processes on one PostgreSQL database (DESIGN §6): the rules that must hold across instances live
 * in the database, and each instance's cache hears of the other's changes (PostgreSQL NOTIFY) — a token revoked or an agent
 * suspended on A is refused on B, a provider changed on A is applied on B — and the single-flight upstream refresh holds across
 * both (the store's lease and row version), with a real oidc-provider counting refresh grants. Each run uses its
 * own schema (`?schema=`), dropped afterwards; both instances share the master key through ATH_MASTER_KEY.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { call, fullFlow } from "../helpers/agent.ts";
import { expectError } from "../helpers/expect-error.ts";
import type { Gateway } from "../helpers/gateway.ts";
import { providerRefreshes } from "../helpers/lifecycle.ts";
import { startPostgresPair, type PostgresPair } from "../helpers/postgres-pair.ts";
import { mailProvider } from "../helpers/world.ts";
import type { UpstreamApi } from "../helpers/upstream-api.ts";
import type { UpstreamAuth } from "../helpers/upstream-auth.ts";

/** Upstream access tokens count as expired (30 s margin) 3 s after issue; a refreshed one stays usable for 3 s. */
const ACCESS_TTL_S = 33;
const STALE_AFTER_MS = (ACCESS_TTL_S - 30) * 1000 + 150;

let pair: PostgresPair;
let auth: UpstreamAuth;
let api: UpstreamApi;
let a: Gateway;
let b: Gateway;
let revokedFlow: Awaited<ReturnType<typeof fullFlow>>;
let crowdFlow: Awaited<ReturnType<typeof fullFlow>>;

beforeAll(async () => {
  pair = await startPostgresPair({ accessTokenTtl: ACCESS_TTL_S });
  ({ auth, api, a, b } = pair);
  revokedFlow = await fullFlow(a.baseUrl, { provider_id: "mail", scopes: ["mail:read"] });
  crowdFlow = await fullFlow(a.baseUrl, { provider_id: "mail", scopes: ["mail:read"] });
  await Bun.sleep(STALE_AFTER_MS);
}, 30_000);

afterAll(() => pair?.stop());

const proxyVia = (g: Gateway, token: string) => call(`${g.baseUrl}/ath/proxy/mail/v1/messages`, { headers: { authorization: `Bearer ${token}` } });

describe("Several instances on one PostgreSQL database", () => {
  test("20 concurrent calls split across A and B after upstream expiry trigger exactly one refresh grant, and all succeed", async () => {
    const before = providerRefreshes(auth);
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => proxyVia(i % 2 === 0 ? a : b, crowdFlow.accessToken)));
    const statuses = results.map((r) => r.status);
    const granted = providerRefreshes(auth).granted - before.granted;
    console.info(`[multi-instance] 20 calls over 2 instances after expiry: ${statuses.filter((s) => s === 200).length} × 200, ${granted} refresh grant(s) at the provider`);
    expect(statuses).toEqual(Array.from({ length: 20 }, () => 200));
    expect(granted).toBe(1);
    expect(providerRefreshes(auth).refused).toBe(before.refused);
  });

  test("a token revoked on A is refused at once on A and, once B hears of it (DESIGN §13: within 100 ms), on B", async () => {
    expect((await proxyVia(b, revokedFlow.accessToken)).status).toBe(200); // B now holds the token in its cache
    const r = await call(`${a.baseUrl}/ath/revoke`, { form: { token: revokedFlow.accessToken, ...revokedFlow.client } });
    expect({ status: r.status, json: r.json }).toEqual({ status: 200, json: {} });
    const revokedAt = performance.now();
    expectError(await proxyVia(a, revokedFlow.accessToken), "TOKEN_REVOKED");
    // B learns of it through PostgreSQL NOTIFY; poll until it refuses (the loop's cap only guards a broken feed).
    let atB = await proxyVia(b, revokedFlow.accessToken);
    while (atB.status === 200 && performance.now() - revokedAt < 5_000) atB = await proxyVia(b, revokedFlow.accessToken);
    console.log(`[multi-instance] B refused the revoked token ${(performance.now() - revokedAt).toFixed(1)} ms after A's revocation answered`);
    expectError(atB, "TOKEN_REVOKED");
    const before = api.requests.length;
    expectError(await proxyVia(b, revokedFlow.accessToken), "TOKEN_REVOKED");
    expect(api.requests.length).toBe(before);
  });

  test("an agent suspended on A has its tokens refused on B once B hears of it (the cached token is dropped)", async () => {
    const flow = await fullFlow(a.baseUrl, { provider_id: "mail", scopes: ["mail:read"] });
    expect((await proxyVia(b, flow.accessToken)).status).toBe(200); // B caches the token
    const patched = await call(`${a.baseUrl}/ath/admin/agents/${flow.client.client_id}`, {
      method: "PATCH",
      json: { status: "suspended" },
      headers: { "x-ath-user-token": a.adminToken },
    });
    expect(patched.status).toBe(200);
    const suspendedAt = performance.now();
    let atB = await proxyVia(b, flow.accessToken);
    while (atB.status === 200 && performance.now() - suspendedAt < 5_000) atB = await proxyVia(b, flow.accessToken);
    console.log(`[multi-instance] B refused the suspended agent's token ${(performance.now() - suspendedAt).toFixed(1)} ms after A answered`);
    expectError(atB, "TOKEN_REVOKED");
  });

  test("a provider changed on A is used by B once B hears of it (the cached provider is dropped)", async () => {
    const flow = await fullFlow(a.baseUrl, { provider_id: "mail", scopes: ["mail:read"] });
    expect((await proxyVia(b, flow.accessToken)).status).toBe(200); // B caches the provider (no scope_rules)
    const put = (extra: Record<string, unknown>) =>
      call(`${a.baseUrl}/ath/admin/providers/mail`, {
        method: "PUT",
        // without client_secret: the stored one is kept
        json: { ...withoutSecret(mailProvider(auth, api)), ...extra },
        headers: { "x-ath-user-token": a.adminToken },
      });
    expect((await put({ scope_rules: { "mail:read": ["GET /v1/elsewhere"] } })).status).toBe(200);
    const changedAt = performance.now();
    let atB = await proxyVia(b, flow.accessToken);
    while (atB.status === 200 && performance.now() - changedAt < 5_000) atB = await proxyVia(b, flow.accessToken);
    console.log(`[multi-instance] B applied A's new scope_rules ${(performance.now() - changedAt).toFixed(1)} ms after A answered`);
    expectError(atB, "SCOPE_NOT_APPROVED");
    expect((await put({})).status).toBe(200);
  });
});

function withoutSecret<T extends { client_secret?: unknown }>(entry: T): Omit<T, "client_secret"> {
  const { client_secret: _secret, ...rest } = entry;
  return rest;
}
