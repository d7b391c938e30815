import { afterEach, describe, expect, setSystemTime, test } from "bun:test";
import { createLocalJWKSet, jwtVerify } from "jose";
import { ExpiringMap } from "../../../../src/gateway/demo/expiring-map.ts";
import { createDemo, type Demo } from "../../../../src/gateway/demo/index.ts";
import { createPkce } from "../../../../src/gateway/oauth/pkce.ts";
import { ProviderConfig } from "../../../../src/protocol/index.ts";

const BASE = "http://127.0.0.1:8787";
const CALLBACK = `${BASE}/ath/callback`;

afterEach(() => setSystemTime());

function authorizeUrl(demo: Demo, over: Record<string, string | null> = {}, challenge = createPkce().challenge): string {
  const u = new URL(`${BASE}/demo/oauth/authorize`);
  const params: Record<string, string | null> = {
    response_type: "code",
    client_id: String(demo.config.client_id),
    redirect_uri: CALLBACK,
    scope: "notes:read notes:write",
    state: "st_1234567890abcdef",
    code_challenge: challenge,
    code_challenge_method: "S256",
    ...over,
  };
  for (const [k, v] of Object.entries(params)) if (v !== null) u.searchParams.set(k, v);
  return u.href;
}

/** The browser half: load the sign-in page, answer it; returns the redirect. */
async function signIn(demo: Demo, url: string, decision = "allow", user = "Ada Lovelace"): Promise<Response> {
  const page = await demo.fetch(new Request(url));
  expect(page.status).toBe(200);
  const html = await page.text();
  const field = (name: string) => new RegExp(`name="${name}" value="([^"]*)"`).exec(html)?.[1] ?? "";
  const cookie = (page.headers.get("set-cookie") ?? "").split(";")[0]!;
  const body = new URLSearchParams({ request: field("request"), csrf: field("csrf"), user, decision });
  return demo.fetch(new Request(`${BASE}/demo/oauth/authorize`, { method: "POST", body, headers: { cookie, "content-type": "application/x-www-form-urlencoded" } }));
}

function tokenRequest(demo: Demo, params: Record<string, string>, auth: "post" | "basic" = "post"): Promise<Response> {
  const body = new URLSearchParams(params);
  const headers: Record<string, string> = { "content-type": "application/x-www-form-urlencoded" };
  if (auth === "post") {
    body.set("client_id", String(demo.config.client_id));
    body.set("client_secret", String(demo.config.client_secret));
  } else {
    headers.authorization = `Basic ${btoa(`${encodeURIComponent(String(demo.config.client_id))}:${encodeURIComponent(String(demo.config.client_secret))}`)}`;
  }
  return demo.fetch(new Request(`${BASE}/demo/oauth/token`, { method: "POST", body, headers }));
}

async function codeFor(demo: Demo, scope = "notes:read notes:write") {
  const pkce = createPkce();
  const res = await signIn(demo, authorizeUrl(demo, { scope }, pkce.challenge));
  expect(res.status).toBe(303);
  const loc = new URL(res.headers.get("location")!);
  return { code: loc.searchParams.get("code")!, verifier: pkce.verifier, location: loc };
}

async function tokens(demo: Demo, scope?: string) {
  const { code, verifier } = await codeFor(demo, scope);
  const res = await tokenRequest(demo, { grant_type: "authorization_code", code, redirect_uri: CALLBACK, code_verifier: verifier });
  expect(res.status).toBe(200);
  return (await res.json()) as { access_token: string; refresh_token: string; scope: string; expires_in: number; token_type: string; id_token?: string };
}

function api(demo: Demo, method: string, path: string, token?: string, body?: unknown): Promise<Response> {
  const headers: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {};
  if (body !== undefined) headers["content-type"] = "application/json";
  return demo.fetch(new Request(`${BASE}/demo/api${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) }));
}

describe("provider config", () => {
  test("is a valid provider entry with absolute endpoints under the base URL and fresh credentials per start", () => {
    const a = createDemo({ baseUrl: BASE });
    const b = createDemo({ baseUrl: BASE });
    const cfg = ProviderConfig.parse(a.config);
    expect(a.providerId).toBe("demo");
    expect(cfg.display_name).toBe("Demo Notes (sandbox)");
    expect(cfg.available_scopes).toEqual(["notes:read", "notes:write"]);
    expect(cfg.authorize_endpoint).toBe(`${BASE}/demo/oauth/authorize`);
    expect(cfg.token_endpoint).toBe(`${BASE}/demo/oauth/token`);
    expect(cfg.api_base_url).toBe(`${BASE}/demo/api`);
    expect(cfg.scope_rules).toEqual({ "notes:read": ["GET /notes", "GET /notes/*"], "notes:write": ["POST /notes", "DELETE /notes/*"] });
    expect(cfg.scope_descriptions?.["notes:read"]).toBeTruthy();
    expect(a.config.client_secret).not.toBe(b.config.client_secret);
    expect(a.config.client_id).not.toBe(b.config.client_id);
  });
});

describe("authorization endpoint (RFC 6749 §4.1.1, RFC 7636)", () => {
  test("a bad client_id or redirect_uri is shown to the user, never redirected", async () => {
    const demo = createDemo({ baseUrl: BASE });
    const overs: Record<string, string | null>[] = [{ client_id: "nope" }, { redirect_uri: "http://evil.example/cb" }, { redirect_uri: null }];
    for (const over of overs) {
      const res = await demo.fetch(new Request(authorizeUrl(demo, over)));
      expect(res.status).toBe(400);
      expect(res.headers.get("location")).toBeNull();
      expect(res.headers.get("content-type")).toBe("text/html; charset=utf-8");
    }
  });

  test("PKCE S256, response_type=code and known scopes are required, errors go back with the state", async () => {
    const demo = createDemo({ baseUrl: BASE });
    const cases: [Record<string, string | null>, string][] = [
      [{ code_challenge: null }, "invalid_request"],
      [{ code_challenge_method: null }, "invalid_request"],
      [{ code_challenge_method: "plain" }, "invalid_request"],
      [{ code_challenge: "short" }, "invalid_request"],
      [{ response_type: "token" }, "unsupported_response_type"],
      [{ scope: "notes:admin" }, "invalid_scope"],
      [{ scope: null }, "invalid_scope"],
    ];
    for (const [over, error] of cases) {
      const res = await demo.fetch(new Request(authorizeUrl(demo, over)));
      expect(res.status).toBe(303);
      const loc = new URL(res.headers.get("location")!);
      expect(`${loc.origin}${loc.pathname}`).toBe(CALLBACK);
      expect([loc.searchParams.get("error"), loc.searchParams.get("state")]).toEqual([error, "st_1234567890abcdef"]);
      expect(loc.searchParams.has("code")).toBe(false);
    }
  });

  test("the sign-in page is labelled SANDBOX, carries a CSRF token and the security headers", async () => {
    const demo = createDemo({ baseUrl: BASE });
    const res = await demo.fetch(new Request(authorizeUrl(demo)));
    const html = await res.text();
    expect(html).toContain("SANDBOX");
    expect(html).toMatch(/name="csrf" value="[A-Za-z0-9_-]{20,}"/);
    expect(html).toMatch(/value="allow"[^>]*>Allow</);
    expect(html).toMatch(/value="cancel"[^>]*>Cancel</);
    expect(html).toContain(`value="Demo User"`);
    expect(res.headers.get("x-frame-options")).toBe("DENY");
    expect(res.headers.get("content-security-policy")).toContain("frame-ancestors 'none'");
    expect(res.headers.get("set-cookie")).toMatch(/^demo_browser=[^;]+; Path=\/demo\/oauth; HttpOnly; SameSite=Lax/);
  });

  test("Allow redirects to the callback with a code and the state", async () => {
    const demo = createDemo({ baseUrl: BASE });
    const { code, location } = await codeFor(demo);
    expect(code).toStartWith("demo_code_");
    expect(location.searchParams.get("state")).toBe("st_1234567890abcdef");
  });

  test("Cancel redirects with error=access_denied and no code", async () => {
    const demo = createDemo({ baseUrl: BASE });
    const res = await signIn(demo, authorizeUrl(demo), "cancel");
    const loc = new URL(res.headers.get("location")!);
    expect([loc.searchParams.get("error"), loc.searchParams.get("state"), loc.searchParams.get("code")]).toEqual(["access_denied", "st_1234567890abcdef", null]);
  });

  test("an answer without the page's CSRF token or from another browser is refused", async () => {
    const demo = createDemo({ baseUrl: BASE });
    const page = await demo.fetch(new Request(authorizeUrl(demo)));
    const html = await page.text();
    const request = /name="request" value="([^"]*)"/.exec(html)![1]!;
    const csrf = /name="csrf" value="([^"]*)"/.exec(html)![1]!;
    const cookie = page.headers.get("set-cookie")!.split(";")[0]!;
    const post = (body: Record<string, string>, c: string) =>
      demo.fetch(new Request(`${BASE}/demo/oauth/authorize`, { method: "POST", body: new URLSearchParams(body), headers: { cookie: c, "content-type": "application/x-www-form-urlencoded" } }));
    expect((await post({ request, csrf: "forged", user: "x", decision: "allow" }, cookie)).status).toBe(403);
    expect((await post({ request, csrf, user: "x", decision: "allow" }, "demo_browser=other")).status).toBe(403);
    // still answerable by the right browser, once
    expect((await post({ request, csrf, user: "x", decision: "allow" }, cookie)).status).toBe(303);
    expect((await post({ request, csrf, user: "x", decision: "allow" }, cookie)).status).toBe(400);
  });

  test("a name without a letter or digit is asked for again", async () => {
    const demo = createDemo({ baseUrl: BASE });
    const res = await signIn(demo, authorizeUrl(demo), "allow", " -- ");
    expect(res.status).toBe(400);
    expect(await res.text()).toContain("Enter a name");
  });
});

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

describe("notes API (RFC 6750)", () => {
  test("notes:read lists and reads; notes:write creates and deletes", async () => {
    const demo = createDemo({ baseUrl: BASE });
    const t = await tokens(demo);
    const list = (await (await api(demo, "GET", "/notes", t.access_token)).json()) as { user: string; notes: { text: string }[] };
    expect(list.user).toBe("ada-lovelace");
    expect(list.notes[0]!.text).toContain("Welcome to Demo Notes, Ada Lovelace");
    const created = await api(demo, "POST", "/notes", t.access_token, { text: "buy milk" });
    expect(created.status).toBe(201);
    const note = (await created.json()) as { id: string; text: string };
    expect(note.text).toBe("buy milk");
    expect(await (await api(demo, "GET", `/notes/${note.id}`, t.access_token)).json()).toMatchObject({ id: note.id, text: "buy milk" });
    expect((await api(demo, "DELETE", `/notes/${note.id}`, t.access_token)).status).toBe(204);
    expect((await api(demo, "GET", `/notes/${note.id}`, t.access_token)).status).toBe(404);
  });

  test("a read-only token gets 403 insufficient_scope on writes, and nothing is written", async () => {
    const demo = createDemo({ baseUrl: BASE });
    const t = await tokens(demo, "notes:read");
    const res = await api(demo, "POST", "/notes", t.access_token, { text: "sneaky" });
    expect(res.status).toBe(403);
    expect(res.headers.get("www-authenticate")).toBe('Bearer realm="demo", error="insufficient_scope", scope="notes:write"');
    const list = (await (await api(demo, "GET", "/notes", t.access_token)).json()) as { notes: { text: string }[] };
    expect(list.notes.map((n) => n.text)).not.toContain("sneaky");
  });

  test("a write-only token cannot read", async () => {
    const demo = createDemo({ baseUrl: BASE });
    const t = await tokens(demo, "notes:write");
    expect((await api(demo, "GET", "/notes", t.access_token)).status).toBe(403);
  });

  test("missing, unknown and expired tokens get 401 with a Bearer challenge", async () => {
    const demo = createDemo({ baseUrl: BASE, accessTokenTtlSeconds: 60 });
    const none = await api(demo, "GET", "/notes");
    expect([none.status, none.headers.get("www-authenticate")]).toEqual([401, 'Bearer realm="demo"']);
    const bad = await api(demo, "GET", "/notes", "demo_at_nope");
    expect(bad.status).toBe(401);
    expect(bad.headers.get("www-authenticate")).toContain('error="invalid_token"');
    const t0 = Date.now();
    const t = await tokens(demo);
    setSystemTime(new Date(t0 + 61_000));
    expect((await api(demo, "GET", "/notes", t.access_token)).status).toBe(401);
  });

  test("each demo user sees only their own notes", async () => {
    const demo = createDemo({ baseUrl: BASE });
    const ada = await tokens(demo);
    await api(demo, "POST", "/notes", ada.access_token, { text: "ada's secret" });
    const pkce = createPkce();
    const res = await signIn(demo, authorizeUrl(demo, {}, pkce.challenge), "allow", "Grace Hopper");
    const code = new URL(res.headers.get("location")!).searchParams.get("code")!;
    const grace = (await (await tokenRequest(demo, { grant_type: "authorization_code", code, redirect_uri: CALLBACK, code_verifier: pkce.verifier })).json()) as { access_token: string };
    const list = (await (await api(demo, "GET", "/notes", grace.access_token)).json()) as { user: string; notes: { text: string }[] };
    expect(list.user).toBe("grace-hopper");
    expect(list.notes.map((n) => n.text)).not.toContain("ada's secret");
  });

  test("bad note bodies are 400 invalid_request", async () => {
    const demo = createDemo({ baseUrl: BASE });
    const t = await tokens(demo);
    for (const body of [{}, { text: "" }, { text: 5 }, { text: "x".repeat(2001) }, null]) {
      const res = await api(demo, "POST", "/notes", t.access_token, body);
      expect([res.status, ((await res.json()) as { error: string }).error]).toEqual([400, "invalid_request"]);
    }
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

describe("routing", () => {
  test("unknown paths are 404 and wrong methods 405, as JSON", async () => {
    const demo = createDemo({ baseUrl: BASE });
    expect((await demo.fetch(new Request(`${BASE}/demo/nope`))).status).toBe(404);
    expect((await demo.fetch(new Request(`${BASE}/demo/oauth/token`))).status).toBe(405);
    const del = await api(demo, "PUT", "/notes");
    expect([del.status, del.headers.get("allow")]).toEqual([405, "GET, POST"]);
  });
});

describe("in-memory state", () => {
  test("a full map sweeps expired entries first, then evicts the oldest: size never exceeds the bound", () => {
    const t0 = Date.now();
    const m = new ExpiringMap<number>(3);
    m.set("short", 1, 1_000);
    m.set("a", 2, 60_000);
    m.set("b", 3, 60_000);
    setSystemTime(new Date(t0 + 2_000));
    m.set("c", 4, 60_000); // sweeps "short"
    expect([m.size, m.get("a"), m.get("short")]).toEqual([3, 2, undefined]);
    m.set("d", 5, 60_000); // nothing expired: evicts the oldest ("a")
    expect([m.size, m.get("a"), m.get("d")]).toEqual([3, undefined, 5]);
    expect([m.take("d"), m.take("d")]).toEqual([5, undefined]);
  });
});
