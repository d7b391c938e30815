/** The sandbox's token, revocation and userinfo endpoints (RFC 6749 §4.1.3 and §6, RFC 7636 §4.6, RFC 7009). */
import { afterEach, describe, expect, setSystemTime, test } from "bun:test";
import { createLocalJWKSet, jwtVerify } from "jose";
import { createDemo } from "../../../../src/gateway/demo/index.ts";
import { createPkce } from "../../../../src/gateway/oauth/pkce.ts";
import { BASE, CALLBACK, api, codeFor, tokenRequest, tokens } from "../../../helpers/demo.ts";

afterEach(() => setSystemTime());

describe("token endpoint — authorization_code (RFC 6749 §4.1.3, RFC 7636 §4.6)", () => {
  test("the right verifier gets tokens and a signed id_token whose sub is the user's slug", async () => {
    const demo = createDemo({ baseUrl: BASE, accessTokenTtlSeconds: 120 });
    const t = await tokens(demo);
    expect(t).toMatchObject({ token_type: "Bearer", expires_in: 120, scope: "notes:read notes:write" });
    expect(t.access_token).toStartWith("demo_at_");
    expect(t.refresh_token).toStartWith("demo_rt_");
    const keys = (await (await demo.fetch(new Request(`${BASE}/demo/oauth/jwks`))).json()) as { keys: [] };
    const { payload, protectedHeader } = await jwtVerify(t.id_token!, createLocalJWKSet(keys), { issuer: `${BASE}/demo`, audience: String(demo.config.client_id) });
    expect(protectedHeader.alg).toBe("ES256");
    expect(payload.sub).toBe("ada-lovelace");
  });

  test("client_secret_basic works as well as client_secret_post", async () => {
    const demo = createDemo({ baseUrl: BASE });
    const { code, verifier } = await codeFor(demo);
    const res = await tokenRequest(demo, { grant_type: "authorization_code", code, redirect_uri: CALLBACK, code_verifier: verifier }, "basic");
    expect(res.status).toBe(200);
  });

  test("a wrong code_verifier is rejected and spends the code", async () => {
    const demo = createDemo({ baseUrl: BASE });
    const { code, verifier } = await codeFor(demo);
    const wrong = await tokenRequest(demo, { grant_type: "authorization_code", code, redirect_uri: CALLBACK, code_verifier: createPkce().verifier });
    expect(wrong.status).toBe(400);
    expect(await wrong.json()).toEqual({ error: "invalid_grant", error_description: "code_verifier does not match the code_challenge" });
    const right = await tokenRequest(demo, { grant_type: "authorization_code", code, redirect_uri: CALLBACK, code_verifier: verifier });
    expect(await right.json()).toEqual({ error: "invalid_grant", error_description: "the code was already used" });
  });

  test("a missing verifier or a different redirect_uri is rejected", async () => {
    const demo = createDemo({ baseUrl: BASE });
    for (const over of [{ code_verifier: "" }, { redirect_uri: `${BASE}/other` }]) {
      const { code, verifier } = await codeFor(demo);
      const res = await tokenRequest(demo, { grant_type: "authorization_code", code, redirect_uri: CALLBACK, code_verifier: verifier, ...over });
      expect(res.status).toBe(400);
      expect(((await res.json()) as { error: string }).error).toBe("invalid_grant");
    }
  });

  test("a code is single-use, and its replay revokes the tokens it issued", async () => {
    const demo = createDemo({ baseUrl: BASE });
    const { code, verifier } = await codeFor(demo);
    const params = { grant_type: "authorization_code", code, redirect_uri: CALLBACK, code_verifier: verifier };
    const first = (await (await tokenRequest(demo, params)).json()) as { access_token: string };
    expect((await api(demo, "GET", "/notes", first.access_token)).status).toBe(200);
    const again = await tokenRequest(demo, params);
    expect(again.status).toBe(400);
    expect(((await again.json()) as { error: string }).error).toBe("invalid_grant");
    expect((await api(demo, "GET", "/notes", first.access_token)).status).toBe(401);
  });

  test("a code expires after 60 seconds", async () => {
    const demo = createDemo({ baseUrl: BASE });
    const t0 = Date.now();
    const { code, verifier } = await codeFor(demo);
    setSystemTime(new Date(t0 + 61_000));
    const res = await tokenRequest(demo, { grant_type: "authorization_code", code, redirect_uri: CALLBACK, code_verifier: verifier });
    expect(await res.json()).toEqual({ error: "invalid_grant", error_description: "the code is invalid or expired" });
  });

  test("bad client credentials get 401 invalid_client and no token", async () => {
    const demo = createDemo({ baseUrl: BASE });
    const { code, verifier } = await codeFor(demo);
    const body = new URLSearchParams({ grant_type: "authorization_code", code, redirect_uri: CALLBACK, code_verifier: verifier, client_id: String(demo.config.client_id), client_secret: "wrong" });
    const res = await demo.fetch(new Request(`${BASE}/demo/oauth/token`, { method: "POST", body, headers: { "content-type": "application/x-www-form-urlencoded" } }));
    expect(res.status).toBe(401);
    expect(((await res.json()) as { error: string }).error).toBe("invalid_client");
  });

  test("malformed token requests are OAuth JSON errors", async () => {
    const demo = createDemo({ baseUrl: BASE });
    const json = await demo.fetch(new Request(`${BASE}/demo/oauth/token`, { method: "POST", body: "{}", headers: { "content-type": "application/json" } }));
    expect([json.status, ((await json.json()) as { error: string }).error]).toEqual([400, "invalid_request"]);
    const grant = await tokenRequest(demo, { grant_type: "password" });
    expect([grant.status, ((await grant.json()) as { error: string }).error]).toEqual([400, "unsupported_grant_type"]);
    const repeated = await demo.fetch(new Request(`${BASE}/demo/oauth/token`, { method: "POST", body: "grant_type=a&grant_type=b", headers: { "content-type": "application/x-www-form-urlencoded" } }));
    expect(((await repeated.json()) as { error: string }).error).toBe("invalid_request");
  });
});

describe("token endpoint — refresh_token with rotation", () => {
  test("a refresh returns a new refresh token and the old one stops working", async () => {
    const demo = createDemo({ baseUrl: BASE });
    const t = await tokens(demo);
    const r1 = await tokenRequest(demo, { grant_type: "refresh_token", refresh_token: t.refresh_token });
    expect(r1.status).toBe(200);
    const n = (await r1.json()) as { access_token: string; refresh_token: string; id_token?: string };
    expect(n.refresh_token).not.toBe(t.refresh_token);
    expect((await api(demo, "GET", "/notes", n.access_token)).status).toBe(200);
    const old = await tokenRequest(demo, { grant_type: "refresh_token", refresh_token: t.refresh_token });
    expect(old.status).toBe(400);
    expect(((await old.json()) as { error: string }).error).toBe("invalid_grant");
    expect((await tokenRequest(demo, { grant_type: "refresh_token", refresh_token: n.refresh_token })).status).toBe(200);
  });

  test("a refresh may narrow the scope but not widen it", async () => {
    const demo = createDemo({ baseUrl: BASE });
    const t = await tokens(demo, "notes:read");
    const wide = await tokenRequest(demo, { grant_type: "refresh_token", refresh_token: t.refresh_token, scope: "notes:read notes:write" });
    expect(((await wide.json()) as { error: string }).error).toBe("invalid_scope");
    const same = await tokenRequest(demo, { grant_type: "refresh_token", refresh_token: t.refresh_token, scope: "notes:read" });
    expect(((await same.json()) as { scope: string }).scope).toBe("notes:read");
  });
});

describe("revocation (RFC 7009) and userinfo", () => {
  test("a revoked access token fails at the API at once", async () => {
    const demo = createDemo({ baseUrl: BASE });
    const t = await tokens(demo);
    const res = await demo.fetch(new Request(`${BASE}/demo/oauth/revoke`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ token: t.access_token, client_id: String(demo.config.client_id), client_secret: String(demo.config.client_secret) }),
    }));
    expect(res.status).toBe(200);
    expect((await api(demo, "GET", "/notes", t.access_token)).status).toBe(401);
  });

  test("revoking a refresh token ends the grant: its access token and refreshes fail", async () => {
    const demo = createDemo({ baseUrl: BASE });
    const t = await tokens(demo);
    const revoke = (token: string) =>
      demo.fetch(new Request(`${BASE}/demo/oauth/revoke`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ token, client_id: String(demo.config.client_id), client_secret: String(demo.config.client_secret) }),
      }));
    expect((await revoke(t.refresh_token)).status).toBe(200);
    expect((await api(demo, "GET", "/notes", t.access_token)).status).toBe(401);
    expect((await tokenRequest(demo, { grant_type: "refresh_token", refresh_token: t.refresh_token })).status).toBe(400);
    expect((await revoke("never-issued")).status).toBe(200);
  });

  test("userinfo returns the demo user for a valid token", async () => {
    const demo = createDemo({ baseUrl: BASE });
    const t = await tokens(demo);
    const res = await demo.fetch(new Request(`${BASE}/demo/oauth/userinfo`, { headers: { authorization: `Bearer ${t.access_token}` } }));
    expect(await res.json()).toEqual({ sub: "ada-lovelace", name: "Ada Lovelace", preferred_username: "ada-lovelace" });
  });
});
