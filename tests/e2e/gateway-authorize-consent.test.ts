/**
 * Phase B steps 1–3 against a running `ath serve` and a real oidc-provider: POST /ath/authorize checks in DESIGN §3
 * order, the consent page (binding cookie, escaping, Approve/Deny), the redirect to the provider with the session's
 * PKCE challenge, and GET /ath/callback (binding cookie, denial, redirect to the agent or the result page).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { AuthorizationResponse } from "../../src/protocol/index.ts";
import { authorize, call, consent, exchange, register, type ClientCredentials } from "../helpers/agent.ts";
import { attest, craftAttestation, makeAgent, type TestAgent } from "../helpers/attestations.ts";
import { Browser, formWithButton } from "../helpers/browser.ts";
import { expectError, expectInvalidRequestNaming } from "../helpers/expect-error.ts";
import { randomString } from "../helpers/net.ts";
import { MAIL_SCOPES, startWorld, type World } from "../helpers/world.ts";

const REDIRECT = "http://127.0.0.1/callback";
const PURPOSE = `<script>alert("x")</script> & "quotes"`;

let w: World;
let agent: TestAgent;
let client: ClientCredentials;

beforeAll(async () => {
  w = await startWorld({
    providers: (auth) => ({
      quick: {
        display_name: "Quick (no consent screen)",
        available_scopes: MAIL_SCOPES,
        authorize_endpoint: auth.authorizeEndpoint,
        token_endpoint: auth.tokenEndpoint,
        client_id: auth.postClient.client_id,
        client_secret: auth.postClient.client_secret,
        consent_screen: false,
      },
    }),
  });
  agent = await makeAgent();
  const r = await register(w.baseUrl, agent, {
    providers: [
      { provider_id: "mail", scopes: ["openid", "mail:read"] },
      { provider_id: "quick", scopes: ["mail:read"] },
    ],
    redirect_uris: [REDIRECT, "https://agent.example/cb"],
    body: { purpose: PURPOSE },
  });
  if (r.status !== 201) throw new Error(r.text);
  client = { client_id: String(r.json.client_id), client_secret: String(r.json.client_secret) };
});
afterAll(() => w?.stop());

const mailRead = { provider_id: "mail", scopes: ["mail:read"] };

describe("Phase B — POST /ath/authorize", () => {
  test("a valid request returns a consent URL on the gateway with the S256 challenge and an ath_sess_ id", async () => {
    const r = await authorize(w.baseUrl, agent, client, mailRead);
    expect(r.status).toBe(200);
    const body = AuthorizationResponse.parse(r.json);
    const url = new URL(body.authorization_url);
    expect(url.origin).toBe(w.baseUrl);
    expect(url.pathname).toStartWith("/ath/consent/");
    expect(url.searchParams.get("code_challenge_method")).toBe("S256");
    expect(url.searchParams.get("code_challenge")).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(body.ath_session_id).toStartWith("ath_sess_");
    // the handle in the URL is not the session id
    expect(body.authorization_url).not.toContain(body.ath_session_id);
  });

  test("an unknown client_id is refused with 403 AGENT_NOT_REGISTERED", async () => {
    const r = await authorize(w.baseUrl, agent, { client_id: "ath_doesnotexist" }, mailRead);
    expectError(r, "AGENT_NOT_REGISTERED");
    expect(r.json).not.toHaveProperty("ath_session_id");
  });

  test("a provider the agent is not approved for is refused with 403 PROVIDER_NOT_APPROVED", async () => {
    expectError(await authorize(w.baseUrl, agent, client, { provider_id: "calendar", scopes: ["calendar:read"] }), "PROVIDER_NOT_APPROVED");
  });

  test("a scope the agent is not approved for is refused with 403 SCOPE_NOT_APPROVED naming it", async () => {
    const r = await authorize(w.baseUrl, agent, client, { provider_id: "mail", scopes: ["mail:read", "mail:send"] });
    expectError(r, "SCOPE_NOT_APPROVED", { unapproved_scopes: ["mail:send"] });
  });

  test("a denied agent is refused with 403 AGENT_UNAPPROVED", async () => {
    const denied = await makeAgent();
    const reg = await register(w.baseUrl, denied, { providers: [{ provider_id: "nosuch", scopes: ["x"] }] });
    expect(reg.json.agent_status).toBe("denied");
    expectError(await authorize(w.baseUrl, denied, { client_id: String(reg.json.client_id) }, { provider_id: "nosuch", scopes: ["x"] }), "AGENT_UNAPPROVED");
  });

  test("a missing, too short or too long state is refused with 400 STATE_MISMATCH naming state (a schema code wins, DESIGN §8)", async () => {
    expectError(await authorize(w.baseUrl, agent, client, { ...mailRead, body: { state: undefined } }), "STATE_MISMATCH", { field: "state" });
    expectError(await authorize(w.baseUrl, agent, client, { ...mailRead, state: "x".repeat(15) }), "STATE_MISMATCH", { field: "state" });
    expectError(await authorize(w.baseUrl, agent, client, { ...mailRead, state: "x".repeat(513) }), "STATE_MISMATCH", { field: "state" });
  });

  test("a user_redirect_uri that was not registered is refused with 400 INVALID_REQUEST naming it", async () => {
    for (const uri of ["https://agent.example/other", "https://evil.example/cb", "http://127.0.0.1/other-path", "http://localhost.evil.example/callback"]) {
      expectInvalidRequestNaming(await authorize(w.baseUrl, agent, client, { ...mailRead, user_redirect_uri: uri }), "user_redirect_uri");
    }
  });

  test("a registered loopback redirect URI matches on any port (RFC 8252 §7.3)", async () => {
    const r = await authorize(w.baseUrl, agent, client, { ...mailRead, user_redirect_uri: "http://127.0.0.1:54321/callback" });
    expect(r.status).toBe(200);
  });

  test("with no redirect URI registered, a user_redirect_uri must be absent", async () => {
    const bare = await makeAgent();
    const reg = await register(w.baseUrl, bare, { providers: [mailRead] });
    const c = { client_id: String(reg.json.client_id) };
    expectInvalidRequestNaming(await authorize(w.baseUrl, bare, c, { ...mailRead, user_redirect_uri: REDIRECT }), "user_redirect_uri");
    expect((await authorize(w.baseUrl, bare, c, mailRead)).status).toBe(200);
  });

  test("attestation sub ≠ the registered agent_id is refused with 403 AGENT_IDENTITY_MISMATCH", async () => {
    const other = await makeAgent();
    const r = await authorize(w.baseUrl, agent, client, { ...mailRead, attestation: await attest(other, w.baseUrl) });
    expectError(r, "AGENT_IDENTITY_MISMATCH");
  });

  test("attestations with a bad signature, audience, lifetime or replayed jti are refused with 401 INVALID_ATTESTATION", async () => {
    const now = Math.floor(Date.now() / 1000);
    const bad = [
      await craftAttestation(agent, w.baseUrl, { key: (await makeAgent()).key }),
      await craftAttestation(agent, `${w.baseUrl}/ath/token`),
      await craftAttestation(agent, w.baseUrl, { claims: { iat: now - 200, exp: now - 100 } }),
      await craftAttestation(agent, w.baseUrl, { claims: { iat: now + 600, exp: now + 900 } }),
      await craftAttestation(agent, w.baseUrl, { alg: "none" }),
      await craftAttestation(agent, w.baseUrl, { alg: "HS256" }),
      await craftAttestation(agent, w.baseUrl, { claims: { jti: undefined } }),
    ];
    for (const attestation of bad) {
      const r = await authorize(w.baseUrl, agent, client, { ...mailRead, attestation });
      expectError(r, "INVALID_ATTESTATION");
      expect(r.json).not.toHaveProperty("ath_session_id");
    }
  });

  test("an attestation's jti can be used only once", async () => {
    const attestation = await attest(agent, w.baseUrl);
    expect((await authorize(w.baseUrl, agent, client, { ...mailRead, attestation })).status).toBe(200);
    expectError(await authorize(w.baseUrl, agent, client, { ...mailRead, attestation }), "INVALID_ATTESTATION");
  });
});

describe("Phase B — consent page and redirect to the provider", () => {
  test("the consent page names the agent (escaped), provider and scopes, sets an HttpOnly SameSite=Lax binding cookie", async () => {
    const r = await authorize(w.baseUrl, agent, client, mailRead);
    const page = await call(String(r.json.authorization_url));
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toContain("text/html");
    const cookie = page.headers.getSetCookie().join("\n");
    expect(cookie).toMatch(/HttpOnly/i);
    expect(cookie).toMatch(/SameSite=Lax/i);
    expect(page.text).toContain(agent.agentId);
    expect(page.text).toContain("Sample Mail");
    expect(page.text).toContain("mail:read");
    expect(page.text).not.toContain("<script>alert");
    expect(page.text).toContain("&lt;script&gt;");
    expect(page.text).toMatch(/<button[^>]*>\s*Approve\s*<\/button>/);
    expect(page.text).toMatch(/<button[^>]*>\s*Deny\s*<\/button>/);
    expect(page.text).not.toContain(r.json.ath_session_id as string);
  });

  test("Approve redirects (303) to the provider with code, client_id, callback, scope, a fresh state and the session's challenge", async () => {
    const r = await authorize(w.baseUrl, agent, client, mailRead);
    const authUrl = new URL(String(r.json.authorization_url));
    const browser = new Browser();
    const page = await browser.navigate(authUrl.href);
    const form = formWithButton(page, "Approve");
    const sent = await browser.submit(page, form, { button: "Approve", stopAt: (u) => u.origin === w.auth.issuer });
    const up = new URL(sent.url);
    expect(sent.status).toBe(303);
    expect(`${up.origin}${up.pathname}`).toBe(w.auth.authorizeEndpoint);
    expect(up.searchParams.get("response_type")).toBe("code");
    expect(up.searchParams.get("client_id")).toBe(w.auth.postClient.client_id);
    expect(up.searchParams.get("redirect_uri")).toBe(`${w.baseUrl}/ath/callback`);
    expect(up.searchParams.get("scope")).toBe("mail:read");
    expect(up.searchParams.get("code_challenge_method")).toBe("S256");
    expect(up.searchParams.get("code_challenge")).toBe(authUrl.searchParams.get("code_challenge"));
    const upstate = up.searchParams.get("state") ?? "";
    expect(upstate.length).toBeGreaterThanOrEqual(16);
    expect(upstate).not.toBe(r.state);
  });

  test("a full consent redirects to the agent's redirect URI with code, the agent's state and the session id", async () => {
    const r = await authorize(w.baseUrl, agent, client, { ...mailRead, user_redirect_uri: "http://127.0.0.1:40001/callback" });
    const c = await consent(String(r.json.authorization_url), { redirectUri: "http://127.0.0.1:40001/callback" });
    expect(c.redirectedTo?.origin).toBe("http://127.0.0.1:40001");
    expect(c.code).toStartWith("ath_code_");
    expect(c.state).toBe(r.state);
    expect(c.sessionId).toBe(String(r.json.ath_session_id));
    const t = await exchange(w.baseUrl, agent, client, { code: c.code ?? "", ath_session_id: String(r.json.ath_session_id) });
    expect(t.status).toBe(200);
  });

  test("without a redirect URI the result page shows the code and the exact `ath token` command", async () => {
    const r = await authorize(w.baseUrl, agent, client, mailRead);
    const c = await consent(String(r.json.authorization_url));
    expect(c.page.status).toBe(200);
    expect(c.code).toStartWith("ath_code_");
    // the command may also name the gateway (`--gateway <url>`) so it works without a configured default
    const command = /ath token (?:--gateway (\S+) )?--code (\S+) --session (\S+)</.exec(c.page.body);
    expect(command?.slice(2)).toEqual([c.code ?? "", String(r.json.ath_session_id)]);
    if (command?.[1] !== undefined) expect(command[1]).toBe(w.baseUrl);
  });

  test("consent_screen: false goes straight to the provider but still sets the binding cookie", async () => {
    const r = await authorize(w.baseUrl, agent, client, { provider_id: "quick", scopes: ["mail:read"] });
    const browser = new Browser();
    const first = await browser.navigate(String(r.json.authorization_url), { stopAt: (u) => u.origin === w.auth.issuer });
    expect(first.status).toBe(303);
    expect(new URL(first.url).origin).toBe(w.auth.issuer);
    expect(browser.cookies.some((k) => k.httpOnly)).toBe(true);
    // the same browser carries on at the provider (the consent URL is bound to the first browser that opened it)
    const c = await consent(first.url, { browser });
    expect(c.code).toStartWith("ath_code_");
  });
});

describe("Phase B — GET /ath/callback", () => {
  test("a callback without the browser-binding cookie is refused with a 400 STATE_MISMATCH page and no code", async () => {
    const r = await authorize(w.baseUrl, agent, client, mailRead);
    const browser = new Browser();
    const callback = (u: URL) => u.href.startsWith(`${w.baseUrl}/ath/callback`);
    let page = await browser.navigate(String(r.json.authorization_url), { stopAt: callback });
    page = await browser.submit(page, formWithButton(page, "Approve"), { button: "Approve", stopAt: callback });
    page = await browser.submit(page, formWithButton(page, "Approve"), { button: "Approve", stopAt: callback });
    expect(page.url).toStartWith(`${w.baseUrl}/ath/callback?`);
    const stranger = await new Browser().navigate(page.url);
    expect(stranger.status).toBe(400);
    expect(stranger.headers.get("content-type")).toContain("text/html");
    expect(stranger.body).toContain("STATE_MISMATCH");
    expect(stranger.body).not.toMatch(/ath_code_/);
  });

  test("a callback with an unknown state is refused and issues no code", async () => {
    const page = await new Browser().navigate(`${w.baseUrl}/ath/callback?code=abc&state=${randomString()}`);
    expect(page.status).toBeGreaterThanOrEqual(400);
    expect(page.status).toBeLessThan(500);
    expect(page.body).not.toMatch(/ath_code_/);
  });

  test("Deny on the consent page sends error=access_denied to the agent, and /ath/token then answers 403 USER_DENIED", async () => {
    const redirectUri = "http://127.0.0.1:40002/callback";
    const r = await authorize(w.baseUrl, agent, client, { ...mailRead, user_redirect_uri: redirectUri });
    const before = w.auth.events.length;
    const c = await consent(String(r.json.authorization_url), { gateway: "Deny", redirectUri });
    expect(c.error).toBe("access_denied");
    expect(c.state).toBe(r.state);
    expect(c.sessionId).toBe(String(r.json.ath_session_id));
    expect(c.code).toBeUndefined();
    expect(w.auth.events.slice(before).filter((e) => e.startsWith("grant.success"))).toEqual([]);
    const t = await exchange(w.baseUrl, agent, client, { code: `ath_code_${randomString()}`, ath_session_id: String(r.json.ath_session_id) });
    expectError(t, "USER_DENIED");
  });

  test("access_denied from the provider marks the session denied: /ath/token answers 403 USER_DENIED", async () => {
    const redirectUri = "http://127.0.0.1:40003/callback";
    const r = await authorize(w.baseUrl, agent, client, { ...mailRead, user_redirect_uri: redirectUri });
    const c = await consent(String(r.json.authorization_url), { upstream: { decision: "Deny" }, redirectUri });
    expect(c.error).toBe("access_denied");
    expect(c.code).toBeUndefined();
    const t = await exchange(w.baseUrl, agent, client, { code: `ath_code_${randomString()}`, ath_session_id: String(r.json.ath_session_id) });
    expectError(t, "USER_DENIED");
    expect(t.json).not.toHaveProperty("access_token");
  });
});
