/**
 * Growing an agent's providers and scopes, in process (DESIGN §17): PATCH /ath/agents/registration with HTTP Basic
 * client credentials and an attestation (aud = base_url) adds scopes through the registration's approval policy —
 * at once under auto approval; under manual approval as `pending_providers` that the admin view lists and approving
 * the agent approves. The admin's `approved_providers` replaces the approved scopes and revokes tokens (and their
 * refresh families) holding a removed scope. AGENT_UNAPPROVED at authorize names the operator's command.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { TokenResponse, RegistrationUpdateResponse } from "../../../../src/protocol/index.ts";
import { authorize, call, fullFlow, registeredAgent, type ClientCredentials } from "../../../helpers/agent.ts";
import { attest, type TestAgent } from "../../../helpers/attestations.ts";
import { expectError, expectInvalidRequestNaming } from "../../../helpers/expect-error.ts";
import { ADMIN_TOKEN, BASE, INTROSPECTION_TOKEN, scriptedGateway, type InProcess } from "../../../helpers/in-process.ts";

let g: InProcess;
afterEach(() => g?.close());

async function start(approval: "auto" | "manual") {
  ({ g } = await scriptedGateway((p) => ({ mail: p.config({ available_scopes: ["mail:read", "mail:send"] }), cal: p.config({ available_scopes: ["cal:read"] }) }), { approval }));
}

const basic = (c: ClientCredentials) => `Basic ${btoa(`${encodeURIComponent(c.client_id)}:${encodeURIComponent(c.client_secret)}`)}`;

async function grow(agent: TestAgent, client: ClientCredentials, requested: { provider_id: string; scopes: string[] }[], o: { attestation?: string } = {}) {
  return call(`${BASE}/ath/agents/registration`, {
    method: "PATCH",
    json: { agent_attestation: o.attestation ?? (await attest(agent, BASE)), requested_providers: requested },
    headers: { authorization: basic(client) },
    fetch: g.fetch,
  });
}

const admin = (method: string, path: string, json?: unknown) =>
  call(`${BASE}${path}`, { method, ...(json === undefined ? {} : { json }), headers: { "x-ath-user-token": ADMIN_TOKEN }, fetch: g.fetch });

const approvedScopes = (providers: { provider_id: string; approved_scopes: string[] }[], id: string) => providers.find((p) => p.provider_id === id)?.approved_scopes;

describe("PATCH /ath/agents/registration — auto approval", () => {
  test("adds scopes and providers at once: kept ones stay, added ones are listed, and authorize accepts them", async () => {
    await start("auto");
    const { agent, client } = await registeredAgent(g, { providers: [{ provider_id: "mail", scopes: ["mail:read"] }] });
    expectError(await authorize(g, agent, client, { provider_id: "mail", scopes: ["mail:send"] }), "SCOPE_NOT_APPROVED");
    const r = await grow(agent, client, [{ provider_id: "mail", scopes: ["mail:send"] }, { provider_id: "cal", scopes: ["cal:read", "cal:write"] }]);
    expect(r.status).toBe(200);
    const doc = RegistrationUpdateResponse.parse(r.json);
    expect(doc.agent_status).toBe("approved");
    expect(approvedScopes(doc.approved_providers, "mail")).toEqual(["mail:read", "mail:send"]);
    expect(approvedScopes(doc.approved_providers, "cal")).toEqual(["cal:read"]);
    expect(doc.approved_providers.find((p) => p.provider_id === "cal")?.denied_scopes).toEqual(["cal:write"]);
    expect(doc.added).toEqual([{ provider_id: "mail", scopes: ["mail:send"] }, { provider_id: "cal", scopes: ["cal:read"] }]);
    expect(doc.pending_providers).toEqual([]);
    expect((await authorize(g, agent, client, { provider_id: "mail", scopes: ["mail:read", "mail:send"] })).status).toBe(200);
    expect(await g.audited("agent.registration_updated")).toBe(1);
  });

  test("without valid client credentials 401 INVALID_CLIENT; a wrong audience 401 INVALID_ATTESTATION; a bad body names the field", async () => {
    await start("auto");
    const { agent, client } = await registeredAgent(g, { providers: [{ provider_id: "mail", scopes: ["mail:read"] }] });
    const wrong = await grow(agent, { ...client, client_secret: "ath_secret_wrong" }, [{ provider_id: "mail", scopes: ["mail:send"] }]);
    expectError(wrong, "INVALID_CLIENT");
    const none = await call(`${BASE}/ath/agents/registration`, { method: "PATCH", json: {}, fetch: g.fetch });
    expectError(none, "INVALID_CLIENT");
    expect(none.headers.get("www-authenticate")).toContain("Basic");
    expectError(await grow(agent, client, [{ provider_id: "mail", scopes: ["mail:send"] }], { attestation: await attest(agent, `${BASE}/ath/token`) }), "INVALID_ATTESTATION");
    expectInvalidRequestNaming(await grow(agent, client, []), "requested_providers");
    const status = await call(`${BASE}/ath/agents/status`, { headers: { authorization: basic(client) }, fetch: g.fetch });
    expect(approvedScopes(status.json.approved_providers as never, "mail")).toEqual(["mail:read"]);
  });
});

describe("PATCH /ath/agents/registration — manual approval", () => {
  test("an approved agent keeps its scopes; additions wait in pending_providers, listed to the admin; approving the agent approves them", async () => {
    await start("manual");
    const { agent, client } = await registeredAgent(g, { providers: [{ provider_id: "mail", scopes: ["mail:read"] }] });
    const refused = await authorize(g, agent, client, { provider_id: "mail", scopes: ["mail:read"] });
    const e = expectError(refused, "AGENT_UNAPPROVED", { operator_command: `ath admin agents approve ${client.client_id}` });
    expect(e.message).toContain(`ath admin agents approve ${client.client_id}`);
    expect((await admin("PATCH", `/ath/admin/agents/${client.client_id}`, { status: "approved" })).status).toBe(200);

    const doc = RegistrationUpdateResponse.parse((await grow(agent, client, [{ provider_id: "mail", scopes: ["mail:send"] }])).json);
    expect(doc.agent_status).toBe("approved");
    expect(doc.pending_providers).toEqual([{ provider_id: "mail", scopes: ["mail:send"] }]);
    expect(doc.added).toEqual([]);
    expect(approvedScopes(doc.approved_providers, "mail")).toEqual(["mail:read"]);
    expectError(await authorize(g, agent, client, { provider_id: "mail", scopes: ["mail:send"] }), "SCOPE_NOT_APPROVED");
    expect((await authorize(g, agent, client, { provider_id: "mail", scopes: ["mail:read"] })).status).toBe(200);

    expect((await admin("GET", `/ath/admin/agents/${client.client_id}`)).json.pending_providers).toEqual([{ provider_id: "mail", scopes: ["mail:send"] }]);
    const approved = await admin("PATCH", `/ath/admin/agents/${client.client_id}`, { status: "approved" });
    expect(approved.json.pending_providers).toEqual([]);
    expect(approvedScopes(approved.json.approved_providers as never, "mail")).toEqual(["mail:read", "mail:send"]);
    expect((await authorize(g, agent, client, { provider_id: "mail", scopes: ["mail:send"] })).status).toBe(200);
  });
});

describe("PATCH /ath/admin/agents/{id} {approved_providers}", () => {
  test("replaces the approved scopes; tokens holding a removed scope die with their refresh family, the others live", async () => {
    await start("auto");
    const wide = await fullFlow(g, { provider_id: "mail", scopes: ["mail:read", "mail:send"] });
    const narrow = await fullFlow(g, { provider_id: "mail", scopes: ["mail:read"], agent: wide.agent, client: wide.client });
    const r = await admin("PATCH", `/ath/admin/agents/${wide.client.client_id}`, { approved_providers: [{ provider_id: "mail", scopes: ["mail:read"] }] });
    expect(r.status).toBe(200);
    expect(r.json.tokens_revoked).toBe(1);
    expect(approvedScopes(r.json.approved_providers as never, "mail")).toEqual(["mail:read"]);
    const active = async (token: string) =>
      (await call(`${BASE}/ath/introspect`, { form: { token }, headers: { authorization: `Bearer ${INTROSPECTION_TOKEN}` }, fetch: g.fetch })).json.active;
    expect(await active(wide.accessToken)).toBe(false);
    expect(await active(narrow.accessToken)).toBe(true);
    const refresh = await call(`${BASE}/ath/token`, {
      form: { grant_type: "refresh_token", ...wide.client, agent_attestation: await attest(wide.agent, `${BASE}/ath/token`), refresh_token: TokenResponse.parse(wide.token.json).refresh_token! },
      fetch: g.fetch,
    });
    expectError(refresh, "INVALID_GRANT", { reason: "refresh_token_revoked" });
    expectInvalidRequestNaming(await admin("PATCH", `/ath/admin/agents/${wide.client.client_id}`, { approved_providers: "mail" }), "approved_providers");
  });
});
