/**
 * DESIGN §14 "What introspection says, the proxy does": once the provider refused a grant's refresh (the user revoked
 * it upstream), the token is `active:false` at /ath/introspect — on the instance that found out and on the other one
 * on the same PostgreSQL database, which had the token and the grant in its cache (real oidc-provider, two `ath serve`
 * processes).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { call, fullFlow } from "../helpers/agent.ts";
import { expectError } from "../helpers/expect-error.ts";
import type { Gateway } from "../helpers/gateway.ts";
import { startPostgresPair, type PostgresPair } from "../helpers/postgres-pair.ts";

let pair: PostgresPair;

beforeAll(async () => {
  pair = await startPostgresPair();
}, 60_000);
afterAll(() => pair?.stop());

const introspect = (g: Gateway, token: string) =>
  call(`${g.baseUrl}/ath/introspect`, { form: { token }, headers: { authorization: `Bearer ${g.adminToken}` } });
const proxyVia = (g: Gateway, token: string) => call(`${g.baseUrl}/ath/proxy/mail/v1/messages`, { headers: { authorization: `Bearer ${token}` } });

describe("introspection of a token whose upstream grant died", () => {
  test("active on A and B while the grant lives; active:false on both once A's refresh was refused", async () => {
    const { a, b, auth } = pair;
    const flow = await fullFlow(a.baseUrl, { provider_id: "mail", scopes: ["mail:read"] });
    // both instances serve it and hold it (token, agent, grant) in their caches
    for (const g of [a, b]) {
      expect((await proxyVia(g, flow.accessToken)).status).toBe(200);
      const r = await introspect(g, flow.accessToken);
      expect({ status: r.status, active: r.json.active, client_id: r.json.client_id }).toEqual({ status: 200, active: true, client_id: flow.client.client_id });
    }
    // the user revokes the grant at the provider: the API refuses the access token, the refresh is refused → dead
    await auth.revokeAllGrants();
    expectError(await proxyVia(a, flow.accessToken), "TOKEN_EXPIRED", { reason: "upstream_grant_revoked" });
    expect((await introspect(a, flow.accessToken)).json).toEqual({ active: false });
    // B learns of it as of a revocation (PostgreSQL NOTIFY); the loop's cap only guards a broken feed
    const since = performance.now();
    let atB = await introspect(b, flow.accessToken);
    while (atB.json.active !== false && performance.now() - since < 5_000) atB = await introspect(b, flow.accessToken);
    expect(atB.json).toEqual({ active: false });
    // and what B says, B's proxy does
    expectError(await proxyVia(b, flow.accessToken), "TOKEN_EXPIRED", { reason: "upstream_grant_revoked" });
  });
});
