/**
 * Manual approval and the admin agent API in process (DESIGN §3 "Phase A", §9): under --approval manual a new agent
 * is pending and cannot authorize until an admin approves it; the admin lists and reads agents without their secret;
 * suspending an agent revokes its live tokens at once.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { authorize, call, fullFlow, register } from "../../../helpers/agent.ts";
import { makeAgent } from "../../../helpers/attestations.ts";
import { expectError } from "../../../helpers/expect-error.ts";
import { ADMIN_TOKEN, BASE, scriptedGateway, type InProcess } from "../../../helpers/in-process.ts";
import type { ScriptedProvider } from "../../../helpers/scripted-provider.ts";

let g: InProcess;
let p: ScriptedProvider;
beforeEach(async () => {
  ({ g, p } = await scriptedGateway((p) => ({ mail: p.config() }), { approval: "manual" }));
});
afterEach(() => g.close());

const admin = { "x-ath-user-token": ADMIN_TOKEN };
const mailRead = { provider_id: "mail", scopes: ["mail:read"] };
const setStatus = (clientId: string, status: string, headers: Record<string, string> = admin) =>
  call(`${BASE}/ath/admin/agents/${clientId}`, { method: "PATCH", json: { status }, headers, fetch: g.fetch });

async function registered() {
  const agent = await makeAgent();
  const reg = await register(g, agent, { providers: [mailRead] });
  expect(reg.status).toBe(201);
  return { agent, reg, client: { client_id: String(reg.json.client_id), client_secret: String(reg.json.client_secret) } };
}

describe("Phase A — manual approval", () => {
  test("under --approval manual a new agent is pending and cannot authorize until an admin approves it", async () => {
    const { agent, reg, client } = await registered();
    expect(reg.json.agent_status).toBe("pending");
    expectError(await authorize(g, agent, client, mailRead), "AGENT_UNAPPROVED", { agent_status: "pending" });
    expect(await g.audited("session.created")).toBe(0);

    const approved = await setStatus(client.client_id, "approved");
    expect(approved.status).toBe(200);
    expect(approved.json.agent_status).toBe("approved");
    expect(approved.text).not.toContain(client.client_secret);

    expect((await authorize(g, agent, client, mailRead)).status).toBe(200);
  });

  test("the admin can list and read agents, never seeing a secret", async () => {
    const { agent, reg } = await registered();
    const list = await call(`${BASE}/ath/admin/agents`, { headers: admin, fetch: g.fetch });
    expect(list.status).toBe(200);
    expect((list.json.agents as { client_id: string }[]).map((a) => a.client_id)).toEqual([String(reg.json.client_id)]);
    const one = await call(`${BASE}/ath/admin/agents/${reg.json.client_id}`, { headers: admin, fetch: g.fetch });
    expect(one.json.agent_id).toBe(agent.agentId);
    expect(one.text).not.toContain(String(reg.json.client_secret));
    expect(one.text).not.toContain("hash");
  });

  test("suspending an agent revokes its live tokens at once, and it can no longer authorize", async () => {
    const { agent, client } = await registered();
    await setStatus(client.client_id, "approved");
    const flow = await fullFlow(g, { ...mailRead, agent, client });
    const proxied = () => call(`${BASE}/ath/proxy/mail/v1/messages`, { headers: { authorization: `Bearer ${flow.accessToken}` }, fetch: g.fetch });
    expect((await proxied()).status).toBe(200);

    const suspended = await setStatus(client.client_id, "suspended");
    expect(suspended.json.tokens_revoked).toBe(1);
    const before = p.api.length;
    expectError(await proxied(), "TOKEN_REVOKED");
    expect(p.api.length).toBe(before);
    expectError(await authorize(g, agent, client, mailRead), "AGENT_UNAPPROVED");
  });

  test("the agent admin API needs the admin token and a valid status", async () => {
    const { client } = await registered();
    expectError(await call(`${BASE}/ath/admin/agents`, { fetch: g.fetch }), "UNAUTHORIZED");
    expectError(await setStatus(client.client_id, "approved", { "x-ath-user-token": "wrong" }), "UNAUTHORIZED");
    expect((await g.gw.store.getAgentByClientId(client.client_id))?.status).toBe("pending");
    expectError(await setStatus("ath_nope", "approved"), "NOT_FOUND");
    expectError(await setStatus("ath_nope", "royal"), "INVALID_REQUEST", { field: "status" });
  });
});
