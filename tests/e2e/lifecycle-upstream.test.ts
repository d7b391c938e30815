/**
 * What the proxy does with the provider's answers (issue 5, DESIGN §3 "Proxy", "Revocation", §8), through a real
 * `ath serve --upstream-timeout 1` and a real oidc-provider: a 401 triggers one refresh and one retry (never for a
 * streamed body), 429/5xx are relayed verbatim and never retried, an unreachable API is 502, a slow one 504, and
 * revoking an ATH token revokes the upstream grant at the provider (RFC 7009) while failures there stay silent.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { call, fullFlow } from "../helpers/agent.ts";
import { expectError } from "../helpers/expect-error.ts";
import { countRows, introspect, providerRefreshes, RATE_LIMITED, startRecorder, startScriptedApi, type Recorder, type ScriptedApi } from "../helpers/lifecycle.ts";
import { freePort } from "../helpers/net.ts";
import { MAIL_SCOPES, startWorld, type World } from "../helpers/world.ts";

let w: World;
let scripted: ScriptedApi;
let recorder: Recorder;
let closedPort: number;
let flow: Awaited<ReturnType<typeof fullFlow>>;

const proxy = (path: string, init: RequestInit = {}) =>
  fetch(`${w.baseUrl}/ath/proxy/scripted${path}`, { ...init, headers: { authorization: `Bearer ${flow.accessToken}`, ...init.headers } });
const refreshes = () => providerRefreshes(w.auth).granted + providerRefreshes(w.auth).refused;

beforeAll(async () => {
  scripted = startScriptedApi();
  recorder = startRecorder();
  closedPort = await freePort();
  w = await startWorld({
    extraArgs: ["--upstream-timeout", "1"],
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
        down: { ...base, display_name: "Unreachable API", api_base_url: `http://127.0.0.1:${closedPort}/v1` },
        revoking: {
          ...base,
          display_name: "Revocation (client_secret_basic)",
          api_base_url: api.baseUrl,
          client_id: auth.basicClient.client_id,
          client_secret: auth.basicClient.client_secret,
          token_endpoint_auth_method: "client_secret_basic",
          revocation_endpoint: `${recorder.url}/revocation`,
        },
        revokedown: { ...base, display_name: "Revocation endpoint down", api_base_url: api.baseUrl, revocation_endpoint: `http://127.0.0.1:${closedPort}/revoke` },
        revoke503: { ...base, display_name: "Revocation endpoint 503", api_base_url: api.baseUrl, revocation_endpoint: `${scripted.url}/unavailable` },
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

  test("a small buffered body is replayed byte for byte on the retry", async () => {
    const body = JSON.stringify({ to: "bob", text: "é".repeat(1000) });
    const r = await proxy("/once401/post", { method: "POST", body, headers: { "content-type": "application/json" } });
    expect(r.status).toBe(200);
    expect(scripted.to("/once401/post").map((s) => s.bodyBytes)).toEqual([Buffer.byteLength(body), Buffer.byteLength(body)]);
  });

  test("a 401 after the retry is relayed as is: one refresh, no loop", async () => {
    const before = refreshes();
    const r = await proxy("/always401");
    expect(r.status).toBe(401);
    expect(r.headers.get("www-authenticate")).toBe('Bearer error="invalid_token"');
    expect(await r.json()).toEqual({ error: "invalid_token" });
    expect(scripted.to("/always401")).toHaveLength(2);
    expect(refreshes()).toBe(before + 1);
  });

  test("a streamed body (no Content-Length, over 1 MiB) is not replayed: the 401 is relayed and nothing is refreshed", async () => {
    const before = refreshes();
    const chunk = new Uint8Array(64 * 1024).fill(120);
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent >= 2 * 1024 * 1024) return controller.close();
        sent += chunk.byteLength;
        controller.enqueue(chunk);
      },
    });
    const r = await proxy("/once401/stream", { method: "POST", body: stream, duplex: "half" } as RequestInit);
    expect(r.status).toBe(401);
    expect(await r.json()).toEqual({ error: "invalid_token" });
    const seen = scripted.to("/once401/stream");
    expect(seen).toHaveLength(1);
    expect(seen[0]?.bodyBytes).toBe(2 * 1024 * 1024);
    expect(seen[0]?.contentLength).toBeNull();
    expect(refreshes()).toBe(before);
  });
});

describe("Proxy — upstream errors are relayed, never retried", () => {
  test("a 429 is relayed verbatim (status, Retry-After, headers, body) and sent upstream once", async () => {
    const before = refreshes();
    const r = await proxy("/ratelimited");
    expect(r.status).toBe(429);
    for (const [name, value] of Object.entries(RATE_LIMITED.headers)) expect(r.headers.get(name)).toBe(value);
    expect(await r.text()).toBe(RATE_LIMITED.body);
    expect(scripted.to("/ratelimited")).toHaveLength(1);
    expect(refreshes()).toBe(before);
  });

  test("a 503 with Retry-After is relayed verbatim and sent upstream once", async () => {
    const r = await proxy("/unavailable");
    expect(r.status).toBe(503);
    expect(r.headers.get("retry-after")).toBe("30");
    expect(await r.text()).toBe("down for maintenance");
    expect(scripted.to("/unavailable")).toHaveLength(1);
  });

  test("an unreachable API answers 502 UPSTREAM_UNAVAILABLE", async () => {
    const down = await fullFlow(w.baseUrl, { provider_id: "down", scopes: ["mail:read"] });
    const r = await call(`${w.baseUrl}/ath/proxy/down/messages`, { headers: { authorization: `Bearer ${down.accessToken}` } });
    expectError(r, "UPSTREAM_UNAVAILABLE");
  });

  test("an API slower than --upstream-timeout answers 504 UPSTREAM_TIMEOUT, and the request is not retried", async () => {
    const r = await proxy("/slow?ms=2500");
    expectError({ status: r.status, headers: r.headers, text: await r.text() }, "UPSTREAM_TIMEOUT");
    expect(scripted.to("/slow")).toHaveLength(1);
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

  test("a revocation endpoint that is down or answers 503 never surfaces: revoke answers 200 {} and the token is revoked", async () => {
    const db = join(w.gw.dataDir, "ath.db");
    for (const provider_id of ["revokedown", "revoke503"]) {
      const f = await fullFlow(w.baseUrl, { provider_id, scopes: ["mail:read"] });
      const failedBefore = countRows(db).audit("grant.revocation_failed");
      const r = await revoke(f.accessToken, f.client);
      expect({ provider_id, status: r.status, json: r.json }).toEqual({ provider_id, status: 200, json: {} });
      expect(countRows(db).audit("grant.revocation_failed")).toBe(failedBefore + 1);
      expectError(await call(`${w.baseUrl}/ath/proxy/${provider_id}/v1/messages`, { headers: { authorization: `Bearer ${f.accessToken}` } }), "TOKEN_REVOKED");
    }
  });
});
