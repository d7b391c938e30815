/**
 * POST /ath/introspect (RFC 7662, DESIGN §7) in process: who may call it, and what it says of live, expired, revoked
 * and unknown tokens — form and JSON alike.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { PATHS } from "../../../../src/protocol/index.ts";
import { makeAgent } from "../../../helpers/attestations.ts";
import { expectError } from "../../../helpers/expect-error.ts";
import { ADMIN_TOKEN, asError, inProcessGateway, INTROSPECTION_TOKEN, postJson, tokenFor, type InProcess } from "../../../helpers/in-process.ts";

let g: InProcess;
beforeEach(async () => {
  g = await inProcessGateway();
});
afterEach(() => g.close());

function introspect(token: string, o: { auth?: Record<string, string>; form?: boolean } = {}) {
  const auth = o.auth ?? { authorization: `Bearer ${INTROSPECTION_TOKEN}` };
  return o.form
    ? g.fetch(PATHS.introspect, { method: "POST", headers: { ...auth, "content-type": "application/x-www-form-urlencoded" }, body: new URLSearchParams({ token }).toString() })
    : g.fetch(PATHS.introspect, { method: "POST", headers: { ...auth, "content-type": "application/json" }, body: JSON.stringify({ token }) });
}

describe("POST /ath/introspect", () => {
  test("a live token is described: scope, client, user, provider, agent, iat and exp — as form and as JSON", async () => {
    const agent = await makeAgent();
    const { client, accessToken } = await tokenFor(g, agent);
    for (const form of [true, false]) {
      const res = await introspect(accessToken, { form });
      expect(res.status).toBe(200);
      expect(res.headers.get("cache-control")).toBe("no-store");
      const body = (await res.json()) as Record<string, unknown>;
      expect(body).toMatchObject({
        active: true,
        token_type: "Bearer",
        scope: "notes:read",
        client_id: client.client_id,
        aud: "demo",
        provider_id: "demo",
        agent_id: agent.agentId,
      });
      expect(body.sub).toBe(body.user_id as string);
      expect(body.exp).toBe((body.iat as number) + 3600);
    }
  });

  test("unknown, expired and revoked tokens are exactly {active: false}", async () => {
    const { client, accessToken } = await tokenFor(g, await makeAgent());
    const inactive = async (token: string) => expect(await (await introspect(token)).json()).toEqual({ active: false });
    await inactive("ath_tk_unknown");
    await inactive("not-even-an-ath-token");
    await postJson(g, PATHS.revoke, { token: accessToken, ...client });
    await inactive(accessToken);
    const other = await tokenFor(g, await makeAgent());
    g.clock.advance(3600);
    await inactive(other.accessToken);
  });

  test("a token whose agent was suspended is inactive", async () => {
    const { client, accessToken } = await tokenFor(g, await makeAgent());
    await g.gw.store.updateAgent(client.client_id, { status: "suspended" });
    expect(await (await introspect(accessToken)).json()).toEqual({ active: false });
  });

  test("the admin token works as a bearer and as X-ATH-User-Token; no token, a wrong one or an ATH token is 401 UNAUTHORIZED", async () => {
    const { accessToken } = await tokenFor(g, await makeAgent());
    for (const auth of [{ authorization: `Bearer ${ADMIN_TOKEN}` }, { "x-ath-user-token": ADMIN_TOKEN }] as Record<string, string>[]) {
      expect(((await (await introspect(accessToken, { auth })).json()) as { active: boolean }).active).toBe(true);
    }
    for (const auth of [{}, { authorization: "Bearer wrong" }, { authorization: `Bearer ${accessToken}` }, { "x-ath-user-token": INTROSPECTION_TOKEN }] as Record<string, string>[]) {
      expectError(await asError(await introspect(accessToken, { auth })), "UNAUTHORIZED");
    }
  });

  test("a body without a token is 400 INVALID_REQUEST naming it", async () => {
    const res = await g.fetch(PATHS.introspect, { method: "POST", headers: { authorization: `Bearer ${INTROSPECTION_TOKEN}`, "content-type": "application/json" }, body: "{}" });
    expectError(await asError(res), "INVALID_REQUEST", { field: "token" });
  });
});
