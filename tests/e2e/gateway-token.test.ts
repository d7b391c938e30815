/**
 * Phase B step 4, POST /ath/token, against a running `ath serve`: form and JSON bodies, client authentication,
 * attestation audience and identity, one-time sessions and codes (also under two concurrent exchanges), and the
 * effective scopes approved ∩ consented ∩ requested. Failed exchanges must leave the session usable.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { TokenResponse } from "../../src/protocol/index.ts";
import { authorize, consent, exchange, register, type ClientCredentials } from "../helpers/agent.ts";
import { attest, craftAttestation, makeAgent, type TestAgent } from "../helpers/attestations.ts";
import { expectError, expectInvalidRequestNaming } from "../helpers/expect-error.ts";
import { randomString } from "../helpers/net.ts";
import { startWorld, type World } from "../helpers/world.ts";

let w: World;
let agent: TestAgent;
let client: ClientCredentials;
let tokenUrl: string;

beforeAll(async () => {
  w = await startWorld();
  tokenUrl = `${w.baseUrl}/ath/token`;
  agent = await makeAgent();
  const r = await register(w.baseUrl, agent, { providers: [{ provider_id: "mail", scopes: ["openid", "mail:read", "mail:send"] }] });
  if (r.status !== 201) throw new Error(r.text);
  client = { client_id: String(r.json.client_id), client_secret: String(r.json.client_secret) };
});
afterAll(() => w?.stop());

/** authorize + consent, returning what the agent needs for /ath/token. */
async function consented(scopes: string[], upstream?: { scopes?: string[]; login?: string }) {
  const a = await authorize(w.baseUrl, agent, client, { provider_id: "mail", scopes });
  if (a.status !== 200) throw new Error(a.text);
  const c = await consent(String(a.json.authorization_url), { upstream });
  if (c.code === undefined) throw new Error(`no code: ${c.page.status} ${c.page.body.slice(0, 400)}`);
  return { code: c.code, ath_session_id: String(a.json.ath_session_id) };
}

describe("Phase B — POST /ath/token", () => {
  test("a form-encoded exchange (RFC 6749 §4.1.3) returns a bound ath_tk_ token with the scope intersection", async () => {
    const s = await consented(["openid", "mail:read"], { login: "bob" });
    const r = await exchange(w.baseUrl, agent, client, s);
    expect(r.status).toBe(200);
    const t = TokenResponse.parse(r.json);
    expect(t.access_token).toStartWith("ath_tk_");
    expect(t.token_type).toBe("Bearer");
    expect(t.expires_in).toBe(3600);
    expect(t.provider_id).toBe("mail");
    expect(t.agent_id).toBe(agent.agentId);
    expect(t.effective_scopes.sort()).toEqual(["mail:read", "openid"]);
    expect(t.scope_intersection.agent_approved.sort()).toEqual(["mail:read", "mail:send", "openid"]);
    expect(t.scope_intersection.user_consented.sort()).toEqual(["mail:read", "openid"]);
    expect(t.scope_intersection.effective.sort()).toEqual(["mail:read", "openid"]);
  });

  test("a JSON exchange is accepted too", async () => {
    const s = await consented(["mail:read"]);
    const r = await exchange(w.baseUrl, agent, client, { ...s, json: true });
    expect(r.status).toBe(200);
    expect(TokenResponse.parse(r.json).effective_scopes).toEqual(["mail:read"]);
  });

  test("effective scopes are approved ∩ consented ∩ requested: scopes the user did not grant are left out", async () => {
    const s = await consented(["openid", "mail:read", "mail:send"], { scopes: ["openid", "mail:read"] });
    const t = TokenResponse.parse((await exchange(w.baseUrl, agent, client, s)).json);
    expect(t.scope_intersection.user_consented.sort()).toEqual(["mail:read", "openid"]);
    expect(t.effective_scopes.sort()).toEqual(["mail:read", "openid"]);
    expect(t.effective_scopes).not.toContain("mail:send");
  });

  test("a wrong client secret is refused with 401 INVALID_CLIENT and does not consume the session", async () => {
    const s = await consented(["mail:read"]);
    expectError(await exchange(w.baseUrl, agent, { ...client, client_secret: `ath_secret_${randomString(32)}` }, s), "INVALID_CLIENT");
    expectError(await exchange(w.baseUrl, agent, { client_id: "ath_unknown", client_secret: client.client_secret }, s), "INVALID_CLIENT");
    expect((await exchange(w.baseUrl, agent, client, s)).status).toBe(200);
  });

  test("a wrong code is refused with 400 INVALID_GRANT and does not consume the session", async () => {
    const s = await consented(["mail:read"]);
    const wrong = await exchange(w.baseUrl, agent, client, { ...s, code: `ath_code_${randomString(32)}` });
    expectError(wrong, "INVALID_GRANT");
    expect(wrong.json).not.toHaveProperty("access_token");
    expect((await exchange(w.baseUrl, agent, client, s)).status).toBe(200);
  });

  test("a session can be exchanged only once: the second exchange gets 400 SESSION_NOT_FOUND", async () => {
    const s = await consented(["mail:read"]);
    expect((await exchange(w.baseUrl, agent, client, s)).status).toBe(200);
    const again = await exchange(w.baseUrl, agent, client, s);
    expectError(again, "SESSION_NOT_FOUND");
    expect(again.json).not.toHaveProperty("access_token");
  });

  test("an unknown session is refused with 400 SESSION_NOT_FOUND", async () => {
    expectError(await exchange(w.baseUrl, agent, client, { code: `ath_code_${randomString()}`, ath_session_id: `ath_sess_${randomString()}` }), "SESSION_NOT_FOUND");
  });

  test("two concurrent exchanges of one session yield exactly one token", async () => {
    const s = await consented(["mail:read"]);
    const results = await Promise.all([exchange(w.baseUrl, agent, client, s), exchange(w.baseUrl, agent, client, s), exchange(w.baseUrl, agent, client, s)]);
    const ok = results.filter((r) => r.status === 200);
    expect(ok).toHaveLength(1);
    for (const r of results.filter((x) => x.status !== 200)) expectError(r, "SESSION_NOT_FOUND");
  });

  test("another client cannot exchange this client's session", async () => {
    const s = await consented(["mail:read"]);
    const thief = await makeAgent();
    const reg = await register(w.baseUrl, thief, { providers: [{ provider_id: "mail", scopes: ["mail:read"] }] });
    const thiefClient = { client_id: String(reg.json.client_id), client_secret: String(reg.json.client_secret) };
    const stolen = await exchange(w.baseUrl, thief, thiefClient, s);
    expect(stolen.status).toBeGreaterThanOrEqual(400);
    expect(stolen.status).toBeLessThan(500);
    expect(stolen.json).not.toHaveProperty("access_token");
    expect((await exchange(w.baseUrl, agent, client, s)).status).toBe(200);
  });

  test("an attestation whose aud is the base URL (not the token endpoint) is refused with 401 INVALID_ATTESTATION", async () => {
    const s = await consented(["mail:read"]);
    expectError(await exchange(w.baseUrl, agent, client, { ...s, attestation: await attest(agent, w.baseUrl) }), "INVALID_ATTESTATION");
    const now = Math.floor(Date.now() / 1000);
    for (const attestation of [
      await craftAttestation(agent, tokenUrl, { claims: { iat: now - 200, exp: now - 100 } }),
      await craftAttestation(agent, tokenUrl, { key: (await makeAgent()).key }),
      await craftAttestation(agent, tokenUrl, { alg: "HS256" }),
    ]) {
      expectError(await exchange(w.baseUrl, agent, client, { ...s, attestation }), "INVALID_ATTESTATION");
    }
    expect((await exchange(w.baseUrl, agent, client, s)).status).toBe(200);
  });

  test("an attestation by another agent is refused with 403 AGENT_IDENTITY_MISMATCH", async () => {
    const s = await consented(["mail:read"]);
    const other = await makeAgent();
    expectError(await exchange(w.baseUrl, agent, client, { ...s, attestation: await attest(other, tokenUrl) }), "AGENT_IDENTITY_MISMATCH");
    expect((await exchange(w.baseUrl, agent, client, s)).status).toBe(200);
  });

  test("a grant_type other than authorization_code or a missing field is 400 INVALID_REQUEST naming it", async () => {
    const s = await consented(["mail:read"]);
    expectInvalidRequestNaming(await exchange(w.baseUrl, agent, client, { ...s, body: { grant_type: "refresh_token" } }), "grant_type");
    expectInvalidRequestNaming(await exchange(w.baseUrl, agent, client, { ...s, ath_session_id: "" }), "ath_session_id");
    expect((await exchange(w.baseUrl, agent, client, s)).status).toBe(200);
  });
});
