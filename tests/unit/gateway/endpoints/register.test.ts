/**
 * POST /ath/agents/register in process (DESIGN §3 "Identity and attestation", "Phase A", §8 registration rules):
 * approvals per provider, one registration per agent_id, every attestation rule, every malformed field — and every
 * refused registration checked to have stored no agent.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { AgentRegistrationResponse } from "../../../../src/protocol/index.ts";
import { call, register } from "../../../helpers/agent.ts";
import { attest, craftAttestation, makeAgent, type TestAgent } from "../../../helpers/attestations.ts";
import { expectError, expectInvalidRequestNaming } from "../../../helpers/expect-error.ts";
import { inProcessGateway, type InProcess } from "../../../helpers/in-process.ts";
import { ScriptedProvider } from "../../../helpers/scripted-provider.ts";

/** An identity-document host on a loopback origin (allowed under --dev), serving the owner's key for any path. */
const IDENTITY_HOST = "http://127.0.0.1:9";

let g: InProcess;
let owner: TestAgent;
beforeEach(async () => {
  const p = new ScriptedProvider();
  owner = await makeAgent();
  g = await inProcessGateway({
    providers: { mail: p.config({ display_name: "Sample Mail", available_scopes: ["openid", "mail:read", "mail:send"] }) },
    hosts: {
      [p.origin]: p.fetch,
      [IDENTITY_HOST]: (req) =>
        Response.json({
          ath_version: "0.1",
          agent_id: req.url,
          name: "identity-document agent",
          developer: { name: "Tests", id: "dev-tests" },
          public_key: owner.key.publicJwk,
        }),
    },
  });
});
afterEach(() => g.close());

const now = () => Math.floor(Date.now() / 1000);
const mailRead = [{ provider_id: "mail", scopes: ["mail:read"] }];

/** After a refused registration no agent is stored, and the same agent can still register. */
async function expectNotRegistered(agent: TestAgent) {
  expect(await g.gw.store.getAgentByAgentId(agent.agentId)).toBeNull();
  expect((await register(g, agent, { providers: mailRead })).status).toBe(201);
}

describe("Phase A — POST /ath/agents/register", () => {
  test("requested scopes within available_scopes are all approved, with credentials and a one-year approval", async () => {
    const r = await register(g, await makeAgent(), { providers: [{ provider_id: "mail", scopes: ["mail:read", "mail:send"] }] });
    expect(r.status).toBe(201);
    const body = AgentRegistrationResponse.parse(r.json);
    expect(body.client_id).toStartWith("ath_");
    expect(body.client_secret).toStartWith("ath_secret_");
    expect(body.agent_status).toBe("approved");
    expect(body.approved_providers).toEqual([{ provider_id: "mail", approved_scopes: ["mail:read", "mail:send"], denied_scopes: [] }]);
    expect(Date.parse(body.approval_expires)).toBe(g.clock.now() + 365 * 24 * 3600 * 1000);
  });

  test("scopes outside available_scopes are denied with a denial_reason, the rest approved", async () => {
    const r = await register(g, await makeAgent(), { providers: [{ provider_id: "mail", scopes: ["mail:read", "mail:delete"] }] });
    expect(r.status).toBe(201);
    const body = AgentRegistrationResponse.parse(r.json);
    expect(body.agent_status).toBe("approved");
    expect(body.approved_providers).toEqual([
      { provider_id: "mail", approved_scopes: ["mail:read"], denied_scopes: ["mail:delete"], denial_reason: "Not offered by mail: mail:delete" },
    ]);
  });

  test("an unknown provider is listed with no approved scopes, all denied, and the agent is denied when nothing was approved", async () => {
    const r = await register(g, await makeAgent(), { providers: [{ provider_id: "nosuch", scopes: ["a", "b"] }] });
    expect(r.status).toBe(201);
    const body = AgentRegistrationResponse.parse(r.json);
    expect(body.agent_status).toBe("denied");
    expect(body.approved_providers).toEqual([
      { provider_id: "nosuch", approved_scopes: [], denied_scopes: ["a", "b"], denial_reason: "Unknown provider 'nosuch'" },
    ]);
  });

  test("the same agent_id cannot register twice (409 AGENT_ALREADY_REGISTERED), and the first registration stays", async () => {
    const agent = await makeAgent();
    const first = await register(g, agent, { providers: mailRead });
    expect(first.status).toBe(201);
    expectError(await register(g, agent, { providers: mailRead }), "AGENT_ALREADY_REGISTERED", { agent_id: agent.agentId });
    expect((await g.gw.store.listAgents()).map((a) => a.client_id)).toEqual([String(first.json.client_id)]);
  });

  test("an agent_id that is an http:// loopback identity document is accepted under --dev, and its key decides", async () => {
    const agent: TestAgent = { key: owner.key, agentId: `${IDENTITY_HOST}/agent.json` };
    expect((await register(g, agent, { providers: mailRead })).status).toBe(201);
    // another key claiming an identity whose document publishes the owner's key is refused
    const impostor: TestAgent = { key: (await makeAgent()).key, agentId: `${IDENTITY_HOST}/other.json` };
    expectError(await register(g, impostor, { providers: mailRead }), "INVALID_ATTESTATION");
    expect(await g.gw.store.getAgentByAgentId(impostor.agentId)).toBeNull();
  });
});

describe("Phase A — attestation checks at register (401 INVALID_ATTESTATION, nothing stored)", () => {
  const cases: [string, (a: TestAgent, aud: string) => Promise<string>][] = [
    ["wrong aud (the token endpoint)", (a, aud) => craftAttestation(a, `${aud}/ath/token`)],
    ["wrong aud (another origin)", (a) => craftAttestation(a, "http://127.0.0.1:1")],
    ["an expired exp", (a, aud) => craftAttestation(a, aud, { claims: { iat: now() - 200, exp: now() - 100 } })],
    ["iat more than 5 minutes in the future", (a, aud) => craftAttestation(a, aud, { claims: { iat: now() + 600, exp: now() + 900 } })],
    ["iat more than 5 minutes in the past", (a, aud) => craftAttestation(a, aud, { claims: { iat: now() - 400, exp: now() + 60 } })],
    ["exp missing", (a, aud) => craftAttestation(a, aud, { claims: { exp: undefined } })],
    ["exp more than 1 h after iat", (a, aud) => craftAttestation(a, aud, { claims: { exp: now() + 3700 } })],
    ["jti missing", (a, aud) => craftAttestation(a, aud, { claims: { jti: undefined } })],
    ["alg none", (a, aud) => craftAttestation(a, aud, { alg: "none" })],
    ["alg HS256", (a, aud) => craftAttestation(a, aud, { alg: "HS256" })],
    ["a signature by another key", async (a, aud) => craftAttestation(a, aud, { key: (await makeAgent()).key })],
    ["a sub that differs from the body's agent_id", async (a, aud) => craftAttestation(a, aud, { claims: { sub: (await makeAgent()).agentId } })],
    ["a value that is not a JWS", async () => "not.a.jwt"],
  ];
  for (const [name, make] of cases) {
    test(`an attestation with ${name} is refused and nothing is stored`, async () => {
      const agent = await makeAgent();
      const r = await register(g, agent, { providers: mailRead, attestation: await make(agent, g.baseUrl) });
      expectError(r, "INVALID_ATTESTATION");
      expect(r.json).not.toHaveProperty("client_secret");
      await expectNotRegistered(agent);
    });
  }
});

describe("Phase A — malformed registrations (400 INVALID_REQUEST naming the field)", () => {
  test("each missing or mistyped field is named, and nothing is stored", async () => {
    const agent = await makeAgent();
    const good = {
      agent_id: agent.agentId,
      agent_attestation: await attest(agent, g.baseUrl),
      developer: { name: "Tests", id: "dev" },
      requested_providers: mailRead,
    };
    const bad: [string, Record<string, unknown>][] = [
      ["requested_providers", { ...good, requested_providers: undefined }],
      ["requested_providers", { ...good, requested_providers: "mail" }],
      ["scopes", { ...good, requested_providers: [{ provider_id: "mail", scopes: "mail:read" }] }],
      ["developer", { ...good, developer: undefined }],
      ["agent_id", { ...good, agent_id: "not a uri" }],
      ["redirect_uris", { ...good, redirect_uris: ["::nope"] }],
    ];
    for (const [field, body] of bad) {
      expectInvalidRequestNaming(await call(`${g.baseUrl}/ath/agents/register`, { json: body, fetch: g.fetch }), field);
    }
    // A schema code fits a bad attestation field, and wins over INVALID_REQUEST (DESIGN §8).
    for (const agent_attestation of [42, undefined, ""]) {
      const r = await call(`${g.baseUrl}/ath/agents/register`, { json: { ...good, agent_attestation }, fetch: g.fetch });
      expectError(r, "INVALID_ATTESTATION", { field: "agent_attestation" });
    }
    await expectNotRegistered(agent);
  });

  test("redirect_uris with script-bearing schemes are refused, naming redirect_uris, and nothing is stored", async () => {
    for (const uri of ["javascript:alert(document.domain)//", "data:text/html,<script>alert(1)</script>"]) {
      const agent = await makeAgent();
      expectInvalidRequestNaming(await register(g, agent, { providers: mailRead, redirect_uris: [uri] }), "redirect_uris");
      await expectNotRegistered(agent);
    }
  });
});
