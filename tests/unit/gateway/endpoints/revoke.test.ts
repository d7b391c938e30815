/**
 * POST /ath/revoke in process (DESIGN §3 "Revocation and admin", spec §7): always 200 `{}`, acting only for the
 * owning client or the admin token; a revoked token is refused by the proxy at once, and its upstream grant is dropped
 * and revoked at the provider's revocation_endpoint (RFC 7009).
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { call, fullFlow } from "../../../helpers/agent.ts";
import { expectError } from "../../../helpers/expect-error.ts";
import { ADMIN_TOKEN, BASE, inProcessGateway, type InProcess } from "../../../helpers/in-process.ts";
import { ScriptedProvider } from "../../../helpers/scripted-provider.ts";

let g: InProcess;
let p: ScriptedProvider;
let busy: ScriptedProvider;
beforeEach(async () => {
  p = new ScriptedProvider();
  busy = new ScriptedProvider("http://busy-provider.test");
  busy.revocationStatus = 503;
  g = await inProcessGateway({
    providers: {
      mail: p.config(),
      revokedown: p.config({ revocation_endpoint: "http://down.test/revoke" }),
      revoke503: busy.config(),
    },
    hosts: { [p.origin]: p.fetch, [busy.origin]: busy.fetch },
  });
});
afterEach(() => g.close());

const flow = () => fullFlow(g, { provider_id: "mail", scopes: ["mail:read"] });
const revoke = (init: Parameters<typeof call>[1]) => call(`${BASE}/ath/revoke`, { method: "POST", ...init, fetch: g.fetch });
const proxied = (token: string, provider = "mail") =>
  call(`${BASE}/ath/proxy/${provider}/v1/messages`, { headers: { authorization: `Bearer ${token}` }, fetch: g.fetch });

describe("POST /ath/revoke", () => {
  test("the owning client revokes its token (form): 200 {} and the proxy answers 401 TOKEN_REVOKED at once, forwarding nothing", async () => {
    const f = await flow();
    expect((await proxied(f.accessToken)).status).toBe(200);
    const r = await revoke({ form: { token: f.accessToken, ...f.client } });
    expect({ status: r.status, body: r.json }).toEqual({ status: 200, body: {} });
    const before = p.api.length;
    expectError(await proxied(f.accessToken), "TOKEN_REVOKED");
    expect(p.api.length).toBe(before);
  });

  test("revocation works with a JSON body too", async () => {
    const f = await flow();
    const r = await revoke({ json: { token: f.accessToken, ...f.client } });
    expect({ status: r.status, body: r.json }).toEqual({ status: 200, body: {} });
    expectError(await proxied(f.accessToken), "TOKEN_REVOKED");
  });

  test("a wrong client secret, another client's credentials or none answer 200 {} and revoke nothing", async () => {
    const f = await flow();
    const other = await flow();
    const bodies: Record<string, string>[] = [
      { token: f.accessToken, client_id: f.client.client_id, client_secret: `${f.client.client_secret}x` },
      { token: f.accessToken, ...other.client },
      { token: f.accessToken },
    ];
    for (const body of bodies) {
      const r = await revoke({ form: body });
      expect({ status: r.status, body: r.json }).toEqual({ status: 200, body: {} });
    }
    expect(await g.audited("token.revoked")).toBe(0);
    expect(await g.audited("token.revocation_ignored")).toBe(3);
    expect(p.revocations).toEqual([]);
    expect((await proxied(f.accessToken)).status).toBe(200);
    expect((await proxied(other.accessToken)).status).toBe(200);
  });

  test("the admin token (X-ATH-User-Token) revokes any token", async () => {
    const f = await flow();
    const r = await revoke({ form: { token: f.accessToken }, headers: { "x-ath-user-token": ADMIN_TOKEN } });
    expect({ status: r.status, body: r.json }).toEqual({ status: 200, body: {} });
    expectError(await proxied(f.accessToken), "TOKEN_REVOKED");
  });

  test("unknown tokens, empty and unparseable bodies all answer 200 {} and leave no audit row (anyone can send them)", async () => {
    for (const init of [
      { form: { token: "ath_tk_unknown", client_id: "ath_x", client_secret: "ath_secret_x" } },
      { body: "" },
      { body: "{not json", headers: { "content-type": "application/json" } },
      { body: "%%%&&&==", headers: { "content-type": "application/x-www-form-urlencoded" } },
      { json: { token: 42 } },
    ]) {
      const r = await revoke(init);
      expect({ status: r.status, body: r.json }).toEqual({ status: 200, body: {} });
    }
    expect(await g.audited("token.revocation_ignored")).toBe(0);
  });

  test("revoking drops the upstream grant and revokes it at the provider's revocation_endpoint: the upstream token stops working", async () => {
    const f = await flow();
    expect((await proxied(f.accessToken)).status).toBe(200);
    const upstreamToken = String(p.api.at(-1)?.bearer);
    await revoke({ form: { token: f.accessToken, ...f.client } });
    expect(p.revocations.map((r) => r.form.token_type_hint)).toEqual(["refresh_token", "access_token"]);
    expect(p.revocations[1]?.form.token).toBe(upstreamToken);
    expect(await g.audited("upstream.revoked")).toBe(1);
    // the provider's API no longer accepts the dropped grant's token
    const direct = await p.fetch(new Request(`${p.origin}/api/v1/messages`, { headers: { authorization: `Bearer ${upstreamToken}` } }));
    expect(direct.status).toBe(401);
  });

  test("a revocation endpoint that is down or answers 503 never surfaces: revoke answers 200 {} and the token is revoked", async () => {
    for (const provider_id of ["revokedown", "revoke503"]) {
      const f = await fullFlow(g, { provider_id, scopes: ["mail:read"] });
      const failedBefore = await g.audited("upstream.revocation_failed");
      const r = await revoke({ form: { token: f.accessToken, ...f.client } });
      expect({ provider_id, status: r.status, json: r.json }).toEqual({ provider_id, status: 200, json: {} });
      expect(await g.audited("upstream.revocation_failed")).toBe(failedBefore + 1);
      expectError(await proxied(f.accessToken, provider_id), "TOKEN_REVOKED");
    }
    expect(g.outbound).toContain("POST http://down.test/revoke");
    // a 503 did not revoke (RFC 7009 §2.2.1): the gateway stops there, audits the failure and moves on
    expect(busy.revocations.map((r) => r.form.token_type_hint)).toEqual(["refresh_token"]);
  });
});
