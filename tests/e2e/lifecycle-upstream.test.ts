/**
 * What only a real provider can show about the upstream grant (issue 5, DESIGN §3 "Proxy", "Revocation"), through a
 * real `ath serve` and a real oidc-provider: after an upstream 401 the gateway refreshes once and the retry's token
 * introspects active at the provider, and revoking an ATH token revokes the grant there (RFC 7009) so its tokens no
 * longer introspect active. The rest of the proxy's answer handling (body replay, 429/5xx verbatim, 502, 504, a
 * revocation endpoint that fails) is tested in process: tests/unit/gateway/proxy/relay.test.ts and
 * tests/unit/gateway/endpoints/revoke.test.ts.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { call, fullFlow } from "../helpers/agent.ts";
import { expectError } from "../helpers/expect-error.ts";
import { introspect, providerRefreshes, startRecorder, startScriptedApi, type Recorder, type ScriptedApi } from "../helpers/lifecycle.ts";
import { MAIL_SCOPES, startWorld, type World } from "../helpers/world.ts";

let w: World;
let scripted: ScriptedApi;
let recorder: Recorder;
let flow: Awaited<ReturnType<typeof fullFlow>>;

const proxy = (path: string, init: RequestInit = {}) =>
  fetch(`${w.baseUrl}/ath/proxy/scripted${path}`, { ...init, headers: { authorization: `Bearer ${flow.accessToken}`, ...init.headers } });
const refreshes = () => providerRefreshes(w.auth).granted + providerRefreshes(w.auth).refused;

beforeAll(async () => {
  scripted = startScriptedApi();
  recorder = startRecorder();
  w = await startWorld({
    providers: (auth, api) => {
      recorder.forward({ token: auth.tokenEndpoint, revocation: auth.revocationEndpoint });
      const base = {
        available_scopes: MAIL_SCOPES,
        authorize_endpoint: auth.authorizeEndpoint,
        token_endpoint: auth.tokenEndpoint,
        client_id: auth.postClient.client_id,
        client_secret: auth.postClient.client_secret,
      };
      return {
        scripted: { ...base, display_name: "Scripted API", api_base_url: scripted.url },
        revoking: {
          ...base,
          display_name: "Revocation (client_secret_basic)",
          api_base_url: api.baseUrl,
          client_id: auth.basicClient.client_id,
          client_secret: auth.basicClient.client_secret,
          token_endpoint_auth_method: "client_secret_basic",
          revocation_endpoint: `${recorder.url}/revocation`,
        },
      };
    },
  });
  flow = await fullFlow(w.baseUrl, { provider_id: "scripted", scopes: ["mail:read"] });
}, 30_000);
afterAll(async () => {
  await w?.stop();
  await scripted?.stop();
  await recorder?.stop();
});

describe("Proxy — upstream 401", () => {
  test("an upstream 401 makes the gateway refresh once and retry once with the new token", async () => {
    const before = refreshes();
    const r = await proxy("/once401/get");
    expect(r.status).toBe(200);
    const seen = scripted.to("/once401/get");
    expect(seen).toHaveLength(2);
    expect(seen[1]?.bearer).not.toBe(seen[0]?.bearer);
    expect(await introspect(w.auth, String(seen[1]?.bearer))).toEqual({ active: true });
    expect(refreshes()).toBe(before + 1);
  });
});

describe("Revocation — the upstream grant", () => {
  const revoke = (token: string, client: { client_id: string; client_secret: string }) => call(`${w.baseUrl}/ath/revoke`, { form: { token, ...client } });

  test("revoking an ATH token revokes the grant at the provider's revocation endpoint; its tokens no longer introspect active", async () => {
    const f = await fullFlow(w.baseUrl, { provider_id: "revoking", scopes: ["mail:read"] });
    const headers = { authorization: `Bearer ${f.accessToken}` };
    expect((await call(`${w.baseUrl}/ath/proxy/revoking/v1/messages`, { headers })).status).toBe(200);
    const upstreamAccess = String(w.api.requests.at(-1)?.headers.authorization).replace(/^Bearer /, "");
    expect(await introspect(w.auth, upstreamAccess)).toEqual({ active: true });

    const r = await revoke(f.accessToken, f.client);
    expect({ status: r.status, json: r.json }).toEqual({ status: 200, json: {} });

    const calls = recorder.calls.filter((c) => c.path === "/revocation");
    expect(calls.map((c) => [c.form.token_type_hint, c.status])).toEqual([["refresh_token", 200], ["access_token", 200]]);
    // RFC 7009 §2.1: form-encoded, client authentication as configured (client_secret_basic: no secret in the form)
    expect(calls[0]?.authorization).toMatch(/^Basic /);
    expect(calls[0]?.form.client_secret).toBeUndefined();
    expect(calls[1]?.form.token).toBe(upstreamAccess);
    expect(await introspect(w.auth, upstreamAccess)).toEqual({ active: false });
    expect(await introspect(w.auth, String(calls[0]?.form.token))).toEqual({ active: false });

    const apiBefore = w.api.requests.length;
    expectError(await call(`${w.baseUrl}/ath/proxy/revoking/v1/messages`, { headers }), "TOKEN_REVOKED");
    expect(w.api.requests.length).toBe(apiBefore);
  });
});
