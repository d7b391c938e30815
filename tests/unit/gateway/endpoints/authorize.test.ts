/**
 * POST /ath/authorize in process (DESIGN §3 Phase B step 1): the checks in their order — client, approval,
 * attestation, provider, scopes, redirect URI, state — each refusal opening no session.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { AuthorizationResponse } from "../../../../src/protocol/index.ts";
import { authorize, register, registeredAgent, type ClientCredentials } from "../../../helpers/agent.ts";
import { attest, craftAttestation, makeAgent, type TestAgent } from "../../../helpers/attestations.ts";
import { expectError, expectInvalidRequestNaming } from "../../../helpers/expect-error.ts";
import { BASE, scriptedGateway, type InProcess } from "../../../helpers/in-process.ts";

const REDIRECT = "http://127.0.0.1/callback";

let g: InProcess;
let agent: TestAgent;
let client: ClientCredentials;
beforeEach(async () => {
  ({ g } = await scriptedGateway((p) => ({
    mail: p.config({ available_scopes: ["openid", "mail:read", "mail:send"] }),
    calendar: p.config({ available_scopes: ["calendar:read"] }),
  })));
  ({ agent, client } = await registeredAgent(g, {
    providers: [{ provider_id: "mail", scopes: ["openid", "mail:read"] }],
    redirect_uris: [REDIRECT, "https://agent.example/cb"],
  }));
});
afterEach(() => g.close());

const mailRead = { provider_id: "mail", scopes: ["mail:read"] };

/** Refused: the exact error, and no consent session was opened. */
async function refused(r: Awaited<ReturnType<typeof authorize>>, code: Parameters<typeof expectError>[1], details?: Record<string, unknown>) {
  expectError(r, code, details);
  expect(r.json).not.toHaveProperty("ath_session_id");
  expect(await g.audited("session.created")).toBe(0);
}

describe("Phase B — POST /ath/authorize", () => {
  test("a valid request returns a consent URL on the gateway with the S256 challenge and an ath_sess_ id", async () => {
    const r = await authorize(g, agent, client, mailRead);
    expect(r.status).toBe(200);
    const body = AuthorizationResponse.parse(r.json);
    const url = new URL(body.authorization_url);
    expect(url.origin).toBe(BASE);
    expect(url.pathname).toStartWith("/ath/consent/");
    expect(url.searchParams.get("code_challenge_method")).toBe("S256");
    expect(url.searchParams.get("code_challenge")).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(body.ath_session_id).toStartWith("ath_sess_");
    // the handle in the URL is not the session id
    expect(body.authorization_url).not.toContain(body.ath_session_id);
  });

  test("an unknown client_id is refused with 403 AGENT_NOT_REGISTERED", async () => {
    await refused(await authorize(g, agent, { client_id: "ath_doesnotexist" }, mailRead), "AGENT_NOT_REGISTERED");
  });

  test("a provider the agent is not approved for is refused with 403 PROVIDER_NOT_APPROVED", async () => {
    await refused(await authorize(g, agent, client, { provider_id: "calendar", scopes: ["calendar:read"] }), "PROVIDER_NOT_APPROVED", { provider_id: "calendar" });
  });

  test("a scope the agent is not approved for is refused with 403 SCOPE_NOT_APPROVED naming it", async () => {
    const r = await authorize(g, agent, client, { provider_id: "mail", scopes: ["mail:read", "mail:send"] });
    await refused(r, "SCOPE_NOT_APPROVED", { unapproved_scopes: ["mail:send"] });
  });

  test("a denied agent is refused with 403 AGENT_UNAPPROVED", async () => {
    const denied = await makeAgent();
    const reg = await register(g, denied, { providers: [{ provider_id: "nosuch", scopes: ["x"] }] });
    expect(reg.json.agent_status).toBe("denied");
    await refused(await authorize(g, denied, { client_id: String(reg.json.client_id) }, { provider_id: "nosuch", scopes: ["x"] }), "AGENT_UNAPPROVED");
  });

  test("a missing, too short or too long state is refused with 400 STATE_MISMATCH naming state (a schema code wins, DESIGN §8)", async () => {
    for (const o of [{ body: { state: undefined } }, { state: "x".repeat(15) }, { state: "x".repeat(513) }]) {
      expectError(await authorize(g, agent, client, { ...mailRead, ...o }), "STATE_MISMATCH", { field: "state" });
    }
    expect(await g.audited("session.created")).toBe(0);
  });

  test("a user_redirect_uri that was not registered is refused with 400 INVALID_REQUEST naming it", async () => {
    for (const uri of ["https://agent.example/other", "https://evil.example/cb", "http://127.0.0.1/other-path", "http://localhost.evil.example/callback"]) {
      expectInvalidRequestNaming(await authorize(g, agent, client, { ...mailRead, user_redirect_uri: uri }), "user_redirect_uri");
    }
    expect(await g.audited("session.created")).toBe(0);
  });

  test("a registered loopback redirect URI matches on any port (RFC 8252 §7.3)", async () => {
    expect((await authorize(g, agent, client, { ...mailRead, user_redirect_uri: "http://127.0.0.1:54321/callback" })).status).toBe(200);
  });

  test("with no redirect URI registered, a user_redirect_uri must be absent", async () => {
    const bare = await makeAgent();
    const reg = await register(g, bare, { providers: [mailRead] });
    const c = { client_id: String(reg.json.client_id) };
    expectInvalidRequestNaming(await authorize(g, bare, c, { ...mailRead, user_redirect_uri: REDIRECT }), "user_redirect_uri");
    expect((await authorize(g, bare, c, mailRead)).status).toBe(200);
  });
});

describe("Phase B — POST /ath/authorize, attestation", () => {
  test("attestation sub ≠ the registered agent_id is refused with 403 AGENT_IDENTITY_MISMATCH", async () => {
    const other = await makeAgent();
    await refused(await authorize(g, agent, client, { ...mailRead, attestation: await attest(other, BASE) }), "AGENT_IDENTITY_MISMATCH");
  });

  test("attestations with a bad signature, audience, lifetime or replayed jti are refused with 401 INVALID_ATTESTATION", async () => {
    const now = Math.floor(Date.now() / 1000);
    const bad = [
      await craftAttestation(agent, BASE, { key: (await makeAgent()).key }),
      await craftAttestation(agent, `${BASE}/ath/token`),
      await craftAttestation(agent, BASE, { claims: { iat: now - 200, exp: now - 100 } }),
      await craftAttestation(agent, BASE, { claims: { iat: now + 600, exp: now + 900 } }),
      await craftAttestation(agent, BASE, { alg: "none" }),
      await craftAttestation(agent, BASE, { alg: "HS256" }),
      await craftAttestation(agent, BASE, { claims: { jti: undefined } }),
    ];
    for (const attestation of bad) await refused(await authorize(g, agent, client, { ...mailRead, attestation }), "INVALID_ATTESTATION");
  });

  test("an attestation's jti can be used only once", async () => {
    const attestation = await attest(agent, BASE);
    expect((await authorize(g, agent, client, { ...mailRead, attestation })).status).toBe(200);
    expectError(await authorize(g, agent, client, { ...mailRead, attestation }), "INVALID_ATTESTATION");
    expect(await g.audited("session.created")).toBe(1);
  });

  test("an attestation used at register cannot be replayed at authorize (one jti cache for every endpoint)", async () => {
    const fresh = await makeAgent();
    const attestation = await attest(fresh, BASE);
    const reg = await register(g, fresh, { providers: [mailRead], attestation });
    expect(reg.status).toBe(201);
    await refused(await authorize(g, fresh, { client_id: String(reg.json.client_id) }, { ...mailRead, attestation }), "INVALID_ATTESTATION");
  });
});
