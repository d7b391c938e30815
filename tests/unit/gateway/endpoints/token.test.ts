/**
 * POST /ath/token in process (DESIGN §3 Phase B step 4, spec §1.8): form and JSON bodies, client authentication,
 * attestation audience and identity, one-time sessions and codes (also under concurrent exchanges), the session's
 * lifetime, and the effective scopes approved ∩ consented ∩ requested — including a provider that narrows the grant.
 * A failed exchange leaves the session usable and issues no token.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { TokenResponse } from "../../../../src/protocol/index.ts";
import { authorize, consent, exchange, register, registeredAgent, type ClientCredentials } from "../../../helpers/agent.ts";
import { attest, craftAttestation, makeAgent, type TestAgent } from "../../../helpers/attestations.ts";
import { expectError, expectInvalidRequestNaming } from "../../../helpers/expect-error.ts";
import { BASE, scriptedGateway, type InProcess } from "../../../helpers/in-process.ts";
import { randomString } from "../../../helpers/net.ts";
import type { ScriptedProvider } from "../../../helpers/scripted-provider.ts";

const TOKEN_URL = `${BASE}/ath/token`;

let g: InProcess;
let p: ScriptedProvider;
let agent: TestAgent;
let client: ClientCredentials;
beforeEach(async () => {
  ({ g, p } = await scriptedGateway((p) => ({
    mail: p.config({ available_scopes: ["openid", "mail:read", "mail:send"] }),
    narrow: p.config({ available_scopes: ["a", "b"] }),
  })));
  ({ agent, client } = await registeredAgent(g, {
    providers: [
      { provider_id: "mail", scopes: ["openid", "mail:read", "mail:send"] },
      { provider_id: "narrow", scopes: ["a", "b"] },
    ],
  }));
});
afterEach(() => g.close());

/** authorize + consent, returning what the agent needs for /ath/token. */
async function consented(scopes: string[], provider_id = "mail") {
  const a = await authorize(g, agent, client, { provider_id, scopes });
  if (a.status !== 200) throw new Error(a.text);
  const c = await consent(String(a.json.authorization_url), { browser: g.browser() });
  if (c.code === undefined) throw new Error(`no code: ${c.page.status} ${c.page.body.slice(0, 400)}`);
  return { code: c.code, ath_session_id: String(a.json.ath_session_id) };
}

/** A refused exchange: the exact error, no token in the answer and none issued. */
async function refused(r: Awaited<ReturnType<typeof exchange>>, code: Parameters<typeof expectError>[1], details?: Record<string, unknown>) {
  const e = expectError(r, code, details);
  expect(r.text).not.toContain("ath_tk_");
  expect(await g.audited("token.issued")).toBe(0);
  return e;
}

describe("Phase B — POST /ath/token", () => {
  test("a form-encoded exchange (RFC 6749 §4.1.3) returns a bound ath_tk_ token with the scope intersection", async () => {
    const s = await consented(["openid", "mail:read"]);
    const r = await exchange(g, agent, client, s);
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
    const r = await exchange(g, agent, client, { ...(await consented(["mail:read"])), json: true });
    expect(r.status).toBe(200);
    expect(TokenResponse.parse(r.json).effective_scopes).toEqual(["mail:read"]);
  });

  test("a wrong client secret is refused with 401 INVALID_CLIENT and does not consume the session", async () => {
    const s = await consented(["mail:read"]);
    await refused(await exchange(g, agent, { ...client, client_secret: `ath_secret_${randomString(32)}` }, s), "INVALID_CLIENT");
    await refused(await exchange(g, agent, { client_id: "ath_unknown", client_secret: client.client_secret }, s), "INVALID_CLIENT");
    expect((await exchange(g, agent, client, s)).status).toBe(200);
  });

  test("a wrong code is refused with 400 INVALID_GRANT and does not consume the session", async () => {
    const s = await consented(["mail:read"]);
    await refused(await exchange(g, agent, client, { ...s, code: `ath_code_${randomString(32)}` }), "INVALID_GRANT");
    expect((await exchange(g, agent, client, s)).status).toBe(200);
  });

  test("a session can be exchanged only once: the second exchange gets 400 SESSION_NOT_FOUND", async () => {
    const s = await consented(["mail:read"]);
    expect((await exchange(g, agent, client, s)).status).toBe(200);
    const again = await exchange(g, agent, client, s);
    expectError(again, "SESSION_NOT_FOUND");
    expect(again.json).not.toHaveProperty("access_token");
    expect(await g.audited("token.issued")).toBe(1);
  });

  test("an unknown session is refused with 400 SESSION_NOT_FOUND", async () => {
    await refused(await exchange(g, agent, client, { code: `ath_code_${randomString()}`, ath_session_id: `ath_sess_${randomString()}` }), "SESSION_NOT_FOUND");
  });

  test("two concurrent exchanges of one session yield exactly one token", async () => {
    const s = await consented(["mail:read"]);
    const results = await Promise.all([exchange(g, agent, client, s), exchange(g, agent, client, s), exchange(g, agent, client, s)]);
    expect(results.filter((r) => r.status === 200)).toHaveLength(1);
    for (const r of results.filter((x) => x.status !== 200)) expectError(r, "SESSION_NOT_FOUND");
    expect(await g.audited("token.issued")).toBe(1);
  });

  test("another client cannot exchange this client's session (400 SESSION_NOT_FOUND), and the owner still can", async () => {
    const s = await consented(["mail:read"]);
    const thief = await makeAgent();
    const reg = await register(g, thief, { providers: [{ provider_id: "mail", scopes: ["mail:read"] }] });
    const thiefClient = { client_id: String(reg.json.client_id), client_secret: String(reg.json.client_secret) };
    await refused(await exchange(g, thief, thiefClient, s), "SESSION_NOT_FOUND");
    expect((await exchange(g, agent, client, s)).status).toBe(200);
  });

  test("a grant_type other than authorization_code or refresh_token, or a missing field, is 400 INVALID_REQUEST naming it", async () => {
    const s = await consented(["mail:read"]);
    expectInvalidRequestNaming(await exchange(g, agent, client, { ...s, body: { grant_type: "password" } }), "grant_type");
    expectInvalidRequestNaming(await exchange(g, agent, client, { ...s, ath_session_id: "" }), "ath_session_id");
    expect(await g.audited("token.issued")).toBe(0);
    expect((await exchange(g, agent, client, s)).status).toBe(200);
  });
});

describe("Phase B — POST /ath/token, attestation", () => {
  test("an attestation whose aud is the base URL (not the token endpoint), expired, by another key or HS256 is refused with 401 INVALID_ATTESTATION", async () => {
    const s = await consented(["mail:read"]);
    await refused(await exchange(g, agent, client, { ...s, attestation: await attest(agent, BASE) }), "INVALID_ATTESTATION");
    const now = Math.floor(Date.now() / 1000);
    for (const attestation of [
      await craftAttestation(agent, TOKEN_URL, { claims: { iat: now - 200, exp: now - 100 } }),
      await craftAttestation(agent, TOKEN_URL, { key: (await makeAgent()).key }),
      await craftAttestation(agent, TOKEN_URL, { alg: "HS256" }),
    ]) {
      await refused(await exchange(g, agent, client, { ...s, attestation }), "INVALID_ATTESTATION");
    }
    expect((await exchange(g, agent, client, s)).status).toBe(200);
  });

  test("an attestation by another agent is refused with 403 AGENT_IDENTITY_MISMATCH", async () => {
    const s = await consented(["mail:read"]);
    await refused(await exchange(g, agent, client, { ...s, attestation: await attest(await makeAgent(), TOKEN_URL) }), "AGENT_IDENTITY_MISMATCH");
    expect((await exchange(g, agent, client, s)).status).toBe(200);
  });
});

describe("Phase B — the session's lifetime", () => {
  test("an expired session yields no code at consent, asks the provider nothing, and answers 400 SESSION_EXPIRED at /ath/token", async () => {
    const a = await authorize(g, agent, client, { provider_id: "mail", scopes: ["mail:read"] });
    expect(a.status).toBe(200);
    g.clock.advance(601);
    const c = await consent(String(a.json.authorization_url), { browser: g.browser() });
    expect(c.code).toBeUndefined();
    expect(c.page.status).toBe(400);
    expect(c.page.body).toContain("SESSION_EXPIRED");
    expect(p.authorizeRequests).toEqual([]);
    expect(p.tokenRequests).toEqual([]);
    const attestation = await attest(agent, TOKEN_URL, g.clock.now());
    const t = await exchange(g, agent, client, { code: `ath_code_${randomString()}`, ath_session_id: String(a.json.ath_session_id), attestation });
    await refused(t, "SESSION_EXPIRED");
  });
});

describe("spec §1.8 — effective scopes at /ath/token", () => {
  test("effective scopes are approved ∩ consented ∩ requested: scopes the user did not grant are left out", async () => {
    p.grantedScope = "openid mail:read";
    const t = TokenResponse.parse((await exchange(g, agent, client, await consented(["openid", "mail:read", "mail:send"]))).json);
    expect(t.scope_intersection.user_consented.sort()).toEqual(["mail:read", "openid"]);
    expect(t.effective_scopes.sort()).toEqual(["mail:read", "openid"]);
  });

  test("a provider granting none of the requested scopes → 403 SCOPE_NOT_APPROVED, no token, upstream grant revoked", async () => {
    p.grantedScope = "unrelated b";
    const r = await exchange(g, agent, client, await consented(["a"], "narrow"));
    await refused(r, "SCOPE_NOT_APPROVED", {
      scope_intersection: { agent_approved: ["a", "b"], user_consented: ["unrelated", "b"], effective: [] },
    });
    expect(p.revocations.length).toBeGreaterThan(0);
    expect(await g.audited("token.refused")).toBe(1);
  });

  test("a provider granting a subset keeps only that subset", async () => {
    p.grantedScope = "a";
    const r = await exchange(g, agent, client, await consented(["a", "b"], "narrow"));
    expect(r.status).toBe(200);
    expect(r.json.effective_scopes).toEqual(["a"]);
  });

  test("a token response without `scope` means the requested scopes were granted (RFC 6749 §5.1)", async () => {
    p.grantedScope = null;
    const r = await exchange(g, agent, client, await consented(["a"], "narrow"));
    expect(r.status).toBe(200);
    expect(r.json.scope_intersection).toEqual({ agent_approved: ["a", "b"], user_consented: ["a"], effective: ["a"] });
  });

  test("an explicitly empty `scope` is an empty grant: nothing is effective", async () => {
    p.grantedScope = "";
    await refused(await exchange(g, agent, client, await consented(["a"], "narrow")), "SCOPE_NOT_APPROVED");
  });
});
