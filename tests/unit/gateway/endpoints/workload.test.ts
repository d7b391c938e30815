/**
 * Workload identity in process (DESIGN §23): an agent registers with a workload JWT from a trusted `kind: workload`
 * issuer — agent_id = its `sub` (a SPIFFE ID) matching the issuer's `subjects`, ≤ 10 minutes — and the DPoP proof of
 * the key its tokens will bind to; afterwards it authenticates with such JWTs at authorize and token, and everything
 * else is unchanged: a DPoP-bound token works at the proxy only with a proof by that key. Every failed check at
 * registration is 401 INVALID_ATTESTATION.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { signDpopProof } from "../../../../src/agent/dpop.ts";
import { call, consent } from "../../../helpers/agent.ts";
import { attest, makeAgent, type TestAgent } from "../../../helpers/attestations.ts";
import { expectError } from "../../../helpers/expect-error.ts";
import { TestIdp } from "../../../helpers/idp.ts";
import { ADMIN_TOKEN, BASE, INTROSPECTION_TOKEN, postJson, scriptedGateway, type InProcess } from "../../../helpers/in-process.ts";

const REGISTER_URL = `${BASE}/ath/agents/register`;
const TOKEN_URL = `${BASE}/ath/token`;
const WORKLOAD = "spiffe://corp.example/agents/build-42";

let g: InProcess;
let idp: TestIdp;
let key: TestAgent;
beforeEach(async () => {
  idp = await TestIdp.start({ alg: "ES256" });
  ({ g } = await scriptedGateway((p) => ({ mail: p.config({ available_scopes: ["mail:read"] }) })));
  const r = await postJson(g, "/ath/admin/trusted-issuers", { issuer: idp.issuer, jwks: idp.jwks(), kind: "workload", subjects: ["spiffe://corp.example/agents/*"] }, { "x-ath-user-token": ADMIN_TOKEN });
  expect(r.status).toBe(201);
  key = await makeAgent(); // the workload's own key pair (its agent_id is the SPIFFE ID, not this key's did:key)
});
afterEach(async () => {
  await g.close();
  await idp.stop();
});

async function registerWith(jwt: string, o: { agentId?: string; proof?: string | null } = {}) {
  const proof = o.proof === undefined ? await signDpopProof(key.key, { method: "POST", url: REGISTER_URL }) : o.proof;
  return postJson(
    g,
    "/ath/agents/register",
    { agent_id: o.agentId ?? WORKLOAD, agent_attestation: jwt, developer: { name: "CI", id: "corp" }, requested_providers: [{ provider_id: "mail", scopes: ["mail:read"] }] },
    proof === null ? {} : { dpop: proof },
  );
}

describe("workload identity (DESIGN §23)", () => {
  test("a workload JWT registers an agent whose tokens bind to the key it proved; it authorizes and gets tokens with workload JWTs, and the proxy takes its token only with that key's proof", async () => {
    const reg = await registerWith(await idp.workloadJwt({ sub: WORKLOAD, aud: BASE }));
    expect(reg.status).toBe(201);
    const client = { client_id: String(reg.json.client_id), client_secret: String(reg.json.client_secret) };
    const auth = await postJson(g, "/ath/authorize", {
      client_id: client.client_id,
      agent_attestation: await idp.workloadJwt({ sub: WORKLOAD, aud: BASE }),
      provider_id: "mail",
      scopes: ["mail:read"],
      state: "workload-state-0123456789",
    });
    expect(auth.status).toBe(200);
    const c = await consent(String(auth.json.authorization_url), { browser: g.browser() });
    const form = { grant_type: "authorization_code", ...client, code: c.code!, ath_session_id: String(auth.json.ath_session_id), agent_attestation: await idp.workloadJwt({ sub: WORKLOAD, aud: TOKEN_URL }) };
    const t = await call(TOKEN_URL, { form, headers: { dpop: await signDpopProof(key.key, { method: "POST", url: TOKEN_URL }) }, fetch: g.fetch });
    expect(t.status).toBe(200);
    expect(t.json.token_type).toBe("DPoP");
    const access = String(t.json.access_token);
    const api = `${BASE}/ath/proxy/mail/v1/messages`;
    const ok = await call(api, { headers: { authorization: `DPoP ${access}`, dpop: await signDpopProof(key.key, { method: "GET", url: api, accessToken: access }) }, fetch: g.fetch });
    expect(ok.status).toBe(200);
    expectError(await call(api, { headers: { authorization: `Bearer ${access}` }, fetch: g.fetch }), "TOKEN_INVALID");
    const other = await makeAgent();
    expectError(await call(api, { headers: { authorization: `DPoP ${access}`, dpop: await signDpopProof(other.key, { method: "GET", url: api, accessToken: access }) }, fetch: g.fetch }), "TOKEN_INVALID", { reason: "invalid_dpop_proof" });
    const intro = await postJson(g, "/ath/introspect", { token: access }, { authorization: `Bearer ${INTROSPECTION_TOKEN}` });
    expect(intro.json).toMatchObject({ active: true, agent_id: WORKLOAD, cnf: { jkt: key.key.thumbprint } });
  });

  test("every failed check at registration is 401 INVALID_ATTESTATION, and nothing is registered", async () => {
    const now = Math.floor(Date.now() / 1000);
    const cases: [string, Promise<string>, { agentId?: string; proof?: string | null }][] = [
      ["a subject outside the issuer's patterns", idp.workloadJwt({ sub: "spiffe://corp.example/other/x", aud: BASE }), { agentId: "spiffe://corp.example/other/x" }],
      ["a deeper path than * allows", idp.workloadJwt({ sub: `${WORKLOAD}/sub`, aud: BASE }), { agentId: `${WORKLOAD}/sub` }],
      ["sub ≠ agent_id", idp.workloadJwt({ sub: WORKLOAD, aud: BASE }), { agentId: "spiffe://corp.example/agents/other" }],
      ["wrong audience", idp.workloadJwt({ sub: WORKLOAD, aud: "https://elsewhere.example" }), {}],
      ["a lifetime over 10 minutes", idp.workloadJwt({ sub: WORKLOAD, aud: BASE }, { claims: { iat: now, exp: now + 3600 } }), {}],
      ["expired", idp.workloadJwt({ sub: WORKLOAD, aud: BASE }, { claims: { iat: now - 400, exp: now - 10 } }), {}],
      ["forged", idp.workloadJwt({ sub: WORKLOAD, aud: BASE }, { forged: true }), {}],
      ["alg none", idp.workloadJwt({ sub: WORKLOAD, aud: BASE }, { unsigned: true }), {}],
      ["an untrusted issuer", idp.workloadJwt({ sub: WORKLOAD, aud: BASE }, { claims: { iss: "https://evil.example" } }), {}],
      ["a bad DPoP proof", idp.workloadJwt({ sub: WORKLOAD, aud: BASE }), { proof: "not.a.proof" }],
    ];
    for (const [name, jwt, o] of cases) {
      const r = await registerWith(await jwt, o);
      expect({ name, status: r.status, code: r.json.code }).toEqual({ name, status: 401, code: "INVALID_ATTESTATION" });
    }
    const once = await idp.workloadJwt({ sub: WORKLOAD, aud: BASE });
    expect((await registerWith(once)).status).toBe(201);
    expectError(await registerWith(once, { agentId: WORKLOAD }), "INVALID_ATTESTATION");
    const listed = await g.fetch("/ath/admin/agents", { headers: { "x-ath-user-token": ADMIN_TOKEN } });
    expect(((await listed.json()) as { agents: unknown[] }).agents).toHaveLength(1);
  });

  test("a registered workload agent: another workload's JWT is AGENT_IDENTITY_MISMATCH, an ES256 attestation is refused, another key's token proof is dpop_key_mismatch", async () => {
    const reg = await registerWith(await idp.workloadJwt({ sub: WORKLOAD, aud: BASE }));
    const client = { client_id: String(reg.json.client_id) };
    const authorize = async (agent_attestation: string) =>
      postJson(g, "/ath/authorize", { client_id: client.client_id, agent_attestation, provider_id: "mail", scopes: ["mail:read"], state: "workload-state-0123456789" });
    expectError(await authorize(await idp.workloadJwt({ sub: "spiffe://corp.example/agents/other", aud: BASE })), "AGENT_IDENTITY_MISMATCH");
    expectError(await authorize(await attest({ key: key.key, agentId: WORKLOAD }, BASE)), "INVALID_ATTESTATION");
    const form = { grant_type: "refresh_token", client_id: client.client_id, client_secret: String(reg.json.client_secret), refresh_token: "ath_rt_x", agent_attestation: await idp.workloadJwt({ sub: WORKLOAD, aud: TOKEN_URL }) };
    const other = await makeAgent();
    const r = await call(TOKEN_URL, { form, headers: { dpop: await signDpopProof(other.key, { method: "POST", url: TOKEN_URL }) }, fetch: g.fetch });
    expectError(r, "INVALID_REQUEST", { reason: "dpop_key_mismatch" });
  });
});
