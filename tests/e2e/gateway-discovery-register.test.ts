/**
 * Discovery and Phase A (POST /ath/agents/register) against a running `ath serve`: DESIGN §3 table, "Identity and
 * attestation", "Phase A", §8 registration rules. Every refused registration is checked to have left no agent.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { AgentRegistrationResponse, DiscoveryDocument } from "../../src/protocol/index.ts";
import { call, register } from "../helpers/agent.ts";
import { attest, craftAttestation, makeAgent, type TestAgent } from "../helpers/attestations.ts";
import { expectError, expectInvalidRequestNaming } from "../helpers/expect-error.ts";
import { startWorld, type World } from "../helpers/world.ts";

let w: World;
let identityServer: ReturnType<typeof Bun.serve> | undefined;
beforeAll(async () => {
  w = await startWorld();
});
afterAll(async () => {
  await identityServer?.stop(true);
  await w?.stop();
});

const now = () => Math.floor(Date.now() / 1000);

/** After a refused registration, the same agent can still register: nothing was stored. */
async function expectNotRegistered(agent: TestAgent) {
  const again = await register(w.baseUrl, agent, { providers: [{ provider_id: "mail", scopes: ["mail:read"] }] });
  expect(again.status).toBe(201);
}

describe("discovery", () => {
  test("GET /.well-known/ath.json lists every provider and absolute endpoint URLs, and no secret", async () => {
    const r = await call(`${w.baseUrl}/.well-known/ath.json`);
    expect(r.status).toBe(200);
    const doc = DiscoveryDocument.parse(r.json);
    expect(doc.ath_version).toBe("0.1");
    expect(doc.agent_registration_endpoint).toBe(`${w.baseUrl}/ath/agents/register`);
    const mail = doc.supported_providers.find((p) => p.provider_id === "mail");
    expect(mail).toEqual({
      provider_id: "mail",
      display_name: "Sample Mail",
      available_scopes: ["openid", "offline_access", "mail:read", "mail:send"],
      auth_mode: "OAUTH2",
      agent_approval_required: true,
    });
    expect(doc.supported_providers.map((p) => p.provider_id).sort()).toEqual(["calendar", "mail", "mailrules", "noapi"]);
    expect(doc.endpoints).toEqual({
      register: `${w.baseUrl}/ath/agents/register`,
      authorize: `${w.baseUrl}/ath/authorize`,
      token: `${w.baseUrl}/ath/token`,
      revoke: `${w.baseUrl}/ath/revoke`,
      proxy: `${w.baseUrl}/ath/proxy`,
    });
    for (const secret of [w.auth.postClient.client_secret, w.auth.basicClient.client_secret, w.gw.adminToken]) {
      expect(r.text).not.toContain(secret);
    }
  });

  test("GET /health answers {status: ok, version}", async () => {
    const r = await call(`${w.baseUrl}/health`);
    expect(r.status).toBe(200);
    expect(r.json.status).toBe("ok");
    expect(typeof r.json.version).toBe("string");
  });
});

describe("Phase A — POST /ath/agents/register", () => {
  test("requested scopes within available_scopes are all approved, with credentials and a one-year approval", async () => {
    const agent = await makeAgent();
    const r = await register(w.baseUrl, agent, { providers: [{ provider_id: "mail", scopes: ["mail:read", "mail:send"] }] });
    expect(r.status).toBe(201);
    const body = AgentRegistrationResponse.parse(r.json);
    expect(body.client_id).toStartWith("ath_");
    expect(body.client_secret).toStartWith("ath_secret_");
    expect(body.agent_status).toBe("approved");
    expect(body.approved_providers).toEqual([{ provider_id: "mail", approved_scopes: ["mail:read", "mail:send"], denied_scopes: [] }]);
    const expires = Date.parse(body.approval_expires);
    expect(expires).toBeGreaterThan(Date.now() + 364 * 24 * 3600 * 1000);
    expect(expires).toBeLessThan(Date.now() + 367 * 24 * 3600 * 1000);
  });

  test("scopes outside available_scopes are denied with a denial_reason, the rest approved", async () => {
    const r = await register(w.baseUrl, await makeAgent(), { providers: [{ provider_id: "mail", scopes: ["mail:read", "mail:delete"] }] });
    expect(r.status).toBe(201);
    const body = AgentRegistrationResponse.parse(r.json);
    expect(body.agent_status).toBe("approved");
    const mail = body.approved_providers[0];
    expect(mail?.approved_scopes).toEqual(["mail:read"]);
    expect(mail?.denied_scopes).toEqual(["mail:delete"]);
    expect(mail?.denial_reason ?? "").not.toBe("");
  });

  test("an unknown provider is listed with no approved scopes, all denied, and the agent is denied when nothing was approved", async () => {
    const r = await register(w.baseUrl, await makeAgent(), { providers: [{ provider_id: "nosuch", scopes: ["a", "b"] }] });
    expect(r.status).toBe(201);
    const body = AgentRegistrationResponse.parse(r.json);
    expect(body.agent_status).toBe("denied");
    expect(body.approved_providers).toHaveLength(1);
    expect(body.approved_providers[0]).toMatchObject({ provider_id: "nosuch", approved_scopes: [], denied_scopes: ["a", "b"] });
    expect(body.approved_providers[0]?.denial_reason ?? "").not.toBe("");
  });

  test("the same agent_id cannot register twice (409 AGENT_ALREADY_REGISTERED)", async () => {
    const agent = await makeAgent();
    const providers = [{ provider_id: "mail", scopes: ["mail:read"] }];
    expect((await register(w.baseUrl, agent, { providers })).status).toBe(201);
    expectError(await register(w.baseUrl, agent, { providers }), "AGENT_ALREADY_REGISTERED");
  });

  test("an agent_id that is an http:// loopback identity document is accepted under --dev, and its key decides", async () => {
    const owner = await makeAgent();
    identityServer = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch: (req) =>
        Response.json({
          ath_version: "0.1",
          agent_id: req.url,
          name: "e2e identity-document agent",
          developer: { name: "E2E", id: "dev-e2e" },
          public_key: owner.key.publicJwk,
        }),
    });
    const base = `http://127.0.0.1:${identityServer.port}`;
    const agent: TestAgent = { key: owner.key, agentId: `${base}/agent.json` };
    const r = await register(w.baseUrl, agent, { providers: [{ provider_id: "mail", scopes: ["mail:read"] }] });
    expect(r.status).toBe(201);
    // another key claiming an identity whose document publishes the owner's key is refused
    const impostor: TestAgent = { key: (await makeAgent()).key, agentId: `${base}/other.json` };
    const other = await register(w.baseUrl, impostor, { providers: [{ provider_id: "mail", scopes: ["mail:read"] }] });
    expectError(other, "INVALID_ATTESTATION");
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
      const r = await register(w.baseUrl, agent, {
        providers: [{ provider_id: "mail", scopes: ["mail:read"] }],
        attestation: await make(agent, w.baseUrl),
      });
      expectError(r, "INVALID_ATTESTATION");
      expect(r.json).not.toHaveProperty("client_secret");
      await expectNotRegistered(agent);
    });
  }
});

describe("Phase A — malformed registrations (400 INVALID_REQUEST naming the field)", () => {
  test("each missing or mistyped field is named", async () => {
    const agent = await makeAgent();
    const good = {
      agent_id: agent.agentId,
      agent_attestation: await attest(agent, w.baseUrl),
      developer: { name: "E2E", id: "dev" },
      requested_providers: [{ provider_id: "mail", scopes: ["mail:read"] }],
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
      const r = await call(`${w.baseUrl}/ath/agents/register`, { json: body });
      expectInvalidRequestNaming(r, field);
    }
    // A schema code fits a bad attestation field, and wins over INVALID_REQUEST (DESIGN §8).
    for (const agent_attestation of [42, undefined, ""]) {
      expectError(await call(`${w.baseUrl}/ath/agents/register`, { json: { ...good, agent_attestation } }), "INVALID_ATTESTATION", { field: "agent_attestation" });
    }
    await expectNotRegistered(agent);
  });
});
