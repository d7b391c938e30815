/**
 * POST /ath/revoke (always 200 `{}`, acts only for the owning client or the admin token, drops the upstream grant)
 * and the admin provider API with X-ATH-User-Token (DESIGN §3 "Revocation and admin", §8), against `ath serve`.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { call, fullFlow } from "../helpers/agent.ts";
import { expectError } from "../helpers/expect-error.ts";
import { startWorld, type World } from "../helpers/world.ts";

let w: World;
beforeAll(async () => {
  w = await startWorld();
});
afterAll(() => w?.stop());

const revokeUrl = () => `${w.baseUrl}/ath/revoke`;
const proxyStatus = async (provider: string, token: string) =>
  call(`${w.baseUrl}/ath/proxy/${provider}/v1/messages`, { headers: { authorization: `Bearer ${token}` } });

describe("POST /ath/revoke", () => {
  test("the owning client revokes its token (form): 200 {} and the proxy answers 401 TOKEN_REVOKED at once", async () => {
    const f = await fullFlow(w.baseUrl, { provider_id: "mail", scopes: ["mail:read"] });
    expect((await proxyStatus("mail", f.accessToken)).status).toBe(200);
    const r = await call(revokeUrl(), { form: { token: f.accessToken, ...f.client } });
    expect(r.status).toBe(200);
    expect(r.json).toEqual({});
    const before = w.api.requests.length;
    expectError(await proxyStatus("mail", f.accessToken), "TOKEN_REVOKED");
    expect(w.api.requests.length).toBe(before);
  });

  test("revocation works with a JSON body too", async () => {
    const f = await fullFlow(w.baseUrl, { provider_id: "mail", scopes: ["mail:read"] });
    const r = await call(revokeUrl(), { json: { token: f.accessToken, ...f.client } });
    expect({ status: r.status, body: r.json }).toEqual({ status: 200, body: {} });
    expectError(await proxyStatus("mail", f.accessToken), "TOKEN_REVOKED");
  });

  test("a wrong client secret or another client's credentials answer 200 {} and revoke nothing", async () => {
    const f = await fullFlow(w.baseUrl, { provider_id: "mail", scopes: ["mail:read"] });
    const other = await fullFlow(w.baseUrl, { provider_id: "mail", scopes: ["mail:read"] });
    const bodies: Record<string, string>[] = [
      { token: f.accessToken, client_id: f.client.client_id, client_secret: `${f.client.client_secret}x` },
      { token: f.accessToken, ...other.client },
      { token: f.accessToken },
    ];
    for (const body of bodies) {
      const r = await call(revokeUrl(), { form: body });
      expect({ status: r.status, body: r.json }).toEqual({ status: 200, body: {} });
    }
    expect((await proxyStatus("mail", f.accessToken)).status).toBe(200);
    expect((await proxyStatus("mail", other.accessToken)).status).toBe(200);
  });

  test("the admin token (X-ATH-User-Token) revokes any token", async () => {
    const f = await fullFlow(w.baseUrl, { provider_id: "mail", scopes: ["mail:read"] });
    const r = await call(revokeUrl(), { form: { token: f.accessToken }, headers: { "x-ath-user-token": w.gw.adminToken } });
    expect({ status: r.status, body: r.json }).toEqual({ status: 200, body: {} });
    expectError(await proxyStatus("mail", f.accessToken), "TOKEN_REVOKED");
  });

  test("unknown tokens, empty and unparseable bodies all answer 200 {}", async () => {
    for (const init of [
      { form: { token: "ath_tk_unknown", client_id: "ath_x", client_secret: "ath_secret_x" } },
      { body: "" },
      { body: "{not json", headers: { "content-type": "application/json" } },
      { body: "%%%&&&==", headers: { "content-type": "application/x-www-form-urlencoded" } },
      { json: { token: 42 } },
    ]) {
      const r = await call(revokeUrl(), { method: "POST", ...init });
      expect({ status: r.status, body: r.json }).toEqual({ status: 200, body: {} });
    }
  });

  test("revoking drops the upstream grant and revokes it at the provider's revocation_endpoint", async () => {
    const f = await fullFlow(w.baseUrl, { provider_id: "mailrules", scopes: ["mail:read"] });
    const before = w.api.requests.length;
    expect((await proxyStatus("mailrules", f.accessToken)).status).toBe(200);
    const upstreamToken = (w.api.requests[before]?.headers.authorization ?? "").replace(/^Bearer /, "");
    const destroyed = w.auth.count("access_token.destroyed") + w.auth.count("refresh_token.destroyed");
    await call(revokeUrl(), { form: { token: f.accessToken, ...f.client } });
    expect(w.auth.count("access_token.destroyed") + w.auth.count("refresh_token.destroyed")).toBeGreaterThan(destroyed);
    // the sample API asks introspection: the dropped grant's token is no longer active there
    const direct = await fetch(`${w.api.baseUrl}/v1/messages`, { headers: { authorization: `Bearer ${upstreamToken}` } });
    expect(direct.status).toBe(401);
  });
});

describe("admin API — /ath/admin/providers", () => {
  const admin = () => ({ "x-ath-user-token": w.gw.adminToken });
  const url = (id = "") => `${w.baseUrl}/ath/admin/providers${id ? `/${id}` : ""}`;

  test("every admin route without or with a wrong X-ATH-User-Token is 401 UNAUTHORIZED", async () => {
    const variants: Record<string, string>[] = [{}, { "x-ath-user-token": "wrong" }, { "x-ath-user-token": `${w.gw.adminToken}x` }, { authorization: `Bearer ${w.gw.adminToken}` }];
    for (const headers of variants) {
      expectError(await call(url(), { headers }), "UNAUTHORIZED");
      expectError(await call(url("mail"), { headers }), "UNAUTHORIZED");
      expectError(await call(url(), { headers, json: { provider_id: "evil", display_name: "x" } }), "UNAUTHORIZED");
      expectError(await call(url("mail"), { method: "DELETE", headers }), "UNAUTHORIZED");
    }
    const discovery = await call(`${w.baseUrl}/.well-known/ath.json`);
    expect(JSON.stringify(discovery.json)).toContain('"mail"');
  });

  test("list and get mask client_secret", async () => {
    const list = await call(url(), { headers: admin() });
    expect(list.status).toBe(200);
    expect(list.text).toContain("mail");
    const one = await call(url("mail"), { headers: admin() });
    expect(one.status).toBe(200);
    for (const r of [list, one]) {
      expect(r.text).not.toContain(w.auth.postClient.client_secret);
      expect(r.text).not.toContain(w.auth.basicClient.client_secret);
    }
  });

  test("POST adds a provider (api_base_url optional) that discovery lists; PUT updates it; DELETE removes it", async () => {
    const created = await call(url(), {
      headers: admin(),
      json: {
        provider_id: "added",
        display_name: "Added at runtime",
        available_scopes: ["mail:read"],
        authorize_endpoint: w.auth.authorizeEndpoint,
        token_endpoint: w.auth.tokenEndpoint,
        client_id: w.auth.postClient.client_id,
        client_secret: w.auth.postClient.client_secret,
      },
    });
    expect(created.status).toBe(201);
    expect(created.text).not.toContain(w.auth.postClient.client_secret);
    const listed = async () => (await call(`${w.baseUrl}/.well-known/ath.json`)).json.supported_providers as { provider_id: string; display_name: string }[];
    expect((await listed()).find((p) => p.provider_id === "added")?.display_name).toBe("Added at runtime");

    const updated = await call(url("added"), {
      method: "PUT",
      headers: admin(),
      json: {
        display_name: "Renamed",
        available_scopes: ["mail:read"],
        authorize_endpoint: w.auth.authorizeEndpoint,
        token_endpoint: w.auth.tokenEndpoint,
        client_id: w.auth.postClient.client_id,
        client_secret: w.auth.postClient.client_secret,
      },
    });
    expect(updated.status).toBe(200);
    expect((await listed()).find((p) => p.provider_id === "added")?.display_name).toBe("Renamed");

    const deleted = await call(url("added"), { method: "DELETE", headers: admin() });
    expect([200, 204]).toContain(deleted.status);
    expect((await listed()).some((p) => p.provider_id === "added")).toBe(false);
    expectError(await call(url("added"), { headers: admin() }), "NOT_FOUND");
  });

  test("an invalid provider body is 400 INVALID_REQUEST naming the field", async () => {
    const r = await call(url(), { headers: admin(), json: { provider_id: "bad", display_name: "Bad", available_scopes: ["x"], authorize_endpoint: "not a url", token_endpoint: w.auth.tokenEndpoint, client_id: "c", client_secret: "s" } });
    const e = expectError(r, "INVALID_REQUEST");
    expect(`${e.message} ${JSON.stringify(e.details ?? {})}`).toContain("authorize_endpoint");
  });
});
