/**
 * Manual approval and the admin API for agents (GET/PATCH /ath/admin/agents…), against a running `ath serve
 * --approval manual`: a pending agent cannot authorize until an admin approves it, and suspending an agent revokes
 * its tokens at once.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { call, fullFlow, register } from "../helpers/agent.ts";
import { makeAgent } from "../helpers/attestations.ts";
import { authorize } from "../helpers/agent.ts";
import { expectError } from "../helpers/expect-error.ts";
import { startWorld, type World } from "../helpers/world.ts";

let w: World;
beforeAll(async () => {
  w = await startWorld({ extraArgs: ["--approval", "manual"] });
});
afterAll(async () => {
  await w?.stop();
});

const admin = () => ({ "x-ath-user-token": w.gw.adminToken });

async function setStatus(clientId: string, status: string) {
  return call(`${w.baseUrl}/ath/admin/agents/${clientId}`, { method: "PATCH", json: { status }, headers: admin() });
}

describe("Phase A — manual approval", () => {
  test("under --approval manual a new agent is pending and cannot authorize until an admin approves it", async () => {
    const agent = await makeAgent();
    const reg = await register(w.baseUrl, agent, { providers: [{ provider_id: "mail", scopes: ["mail:read"] }] });
    expect(reg.status).toBe(201);
    expect(reg.json.agent_status).toBe("pending");
    const client = { client_id: String(reg.json.client_id), client_secret: String(reg.json.client_secret) };

    const before = await authorize(w.baseUrl, agent, client, { provider_id: "mail", scopes: ["mail:read"] });
    expectError(before, "AGENT_UNAPPROVED", { agent_status: "pending" });

    const approved = await setStatus(client.client_id, "approved");
    expect(approved.status).toBe(200);
    expect(approved.json.agent_status).toBe("approved");
    expect(approved.text).not.toContain(client.client_secret);

    const after = await authorize(w.baseUrl, agent, client, { provider_id: "mail", scopes: ["mail:read"] });
    expect(after.status).toBe(200);
  });

  test("the admin can list and read agents, never seeing a secret", async () => {
    const agent = await makeAgent();
    const reg = await register(w.baseUrl, agent, { providers: [{ provider_id: "mail", scopes: ["mail:read"] }] });
    const list = await call(`${w.baseUrl}/ath/admin/agents`, { headers: admin() });
    expect(list.status).toBe(200);
    const ids = (list.json.agents as { client_id: string }[]).map((a) => a.client_id);
    expect(ids).toContain(String(reg.json.client_id));
    const one = await call(`${w.baseUrl}/ath/admin/agents/${reg.json.client_id}`, { headers: admin() });
    expect(one.json.agent_id).toBe(agent.agentId);
    expect(one.text).not.toContain(String(reg.json.client_secret));
    expect(one.text).not.toContain("hash");
  });

  test("suspending an agent revokes its live tokens at once", async () => {
    const agent = await makeAgent();
    const reg = await register(w.baseUrl, agent, { providers: [{ provider_id: "mail", scopes: ["mail:read"] }] });
    const client = { client_id: String(reg.json.client_id), client_secret: String(reg.json.client_secret) };
    await setStatus(client.client_id, "approved");
    const flow = await fullFlow(w.baseUrl, { provider_id: "mail", scopes: ["mail:read"], agent, client });
    const bearer = { authorization: `Bearer ${flow.token.json.access_token}` };
    expect((await call(`${w.baseUrl}/ath/proxy/mail/v1/messages`, { headers: bearer })).status).toBe(200);

    const suspended = await setStatus(client.client_id, "suspended");
    expect(suspended.json.tokens_revoked).toBe(1);
    expectError(await call(`${w.baseUrl}/ath/proxy/mail/v1/messages`, { headers: bearer }), "TOKEN_REVOKED");
    expectError(await authorize(w.baseUrl, agent, client, { provider_id: "mail", scopes: ["mail:read"] }), "AGENT_UNAPPROVED");
  });

  test("the agent admin API needs the admin token and a valid status", async () => {
    expectError(await call(`${w.baseUrl}/ath/admin/agents`), "UNAUTHORIZED");
    expectError(await call(`${w.baseUrl}/ath/admin/agents/ath_nope`, { method: "PATCH", json: { status: "approved" }, headers: { "x-ath-user-token": "wrong" } }), "UNAUTHORIZED");
    expectError(await setStatus("ath_nope", "approved"), "NOT_FOUND");
    const bad = await setStatus("ath_nope", "royal");
    expectError(bad, "INVALID_REQUEST");
    expect(bad.json.details).toMatchObject({ field: "status" });
  });
});
