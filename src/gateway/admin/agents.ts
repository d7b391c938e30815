/**
 * The admin API for agents: list, read, and change an agent's status. This is what makes `--approval manual`
 * usable: a pending agent waits until an admin sets it `approved`. Denying, suspending or removing an agent revokes
 * every token it holds at once.
 */
import type { z } from "zod";
import { AdminAgentPatch, type AdminAgent } from "../../protocol/admin.ts";
import { ApprovalRules, AthError } from "../../protocol/index.ts";
import type { AgentRecord } from "../../store/types.ts";
import { audit } from "../domain/audit.ts";
import { afterRevocation } from "../domain/tokens.ts";
import type { Call, Gateway } from "../context.ts";
import { readJson } from "../http/request.ts";
import { json } from "../http/response.ts";

export async function list({ gw }: Call): Promise<Response> {
  return json({ agents: (await gw.store.listAgents()).map(view) });
}

export async function get({ gw, params }: Call): Promise<Response> {
  return json(view(await find(gw, params.client_id!)));
}

export async function patch(call: Call): Promise<Response> {
  const { status, approval_rules } = await readJson(call, AdminAgentPatch);
  const clientId = call.params.client_id!;
  if (approval_rules !== undefined) await setApprovalRules(call.gw, clientId, approval_rules);
  return json(status !== undefined ? await setAgentStatus(call.gw, clientId, status) : view(await find(call.gw, clientId)));
}

/** Replaces the agent's own approval rules (added to its providers' at the proxy). */
export async function setApprovalRules(gw: Gateway, clientId: string, rules: z.output<typeof ApprovalRules>) {
  const agent = await find(gw, clientId);
  await gw.store.updateAgent(clientId, { approval_rules: rules.length ? rules : null });
  await audit(gw, "agent.approval_rules_set", { client_id: clientId, agent_id: agent.agent_id, data: { by: "admin", rules: rules.length } });
}

/**
 * Approves, denies or suspends an agent (the API's PATCH and the console's buttons). One transaction (DESIGN §14): the
 * agent row locked, its status changed and — denied or suspended — its tokens revoked together, so a token being
 * issued meanwhile (which locks the same row) is either refused or revoked here. The upstream grants go after the
 * commit, as /ath/revoke's would (that calls the provider).
 */
export async function setAgentStatus(gw: Gateway, clientId: string, status: "approved" | "denied" | "suspended") {
  const { agent, revoked } = await gw.store.transaction(async (tx) => {
    const agent = await tx.lockAgent(clientId);
    if (!agent) throw notFound(clientId);
    await tx.updateAgent(clientId, { status });
    const revoked = status === "approved" ? [] : await tx.revokeTokensWhere({ client_id: clientId }, gw.now());
    return { agent, revoked };
  });
  await afterRevocation(gw, revoked, "admin");
  const tokensRevoked = revoked.length;
  await audit(gw, `agent.${status}`, { client_id: clientId, agent_id: agent.agent_id, data: { by: "admin", tokens_revoked: tokensRevoked } });
  return { ...view({ ...agent, status }), tokens_revoked: tokensRevoked };
}

export async function remove({ gw, params }: Call): Promise<Response> {
  return json(await removeAgent(gw, params.client_id!));
}

/**
 * DELETE: the agent's tokens revoked and the agent gone with its sessions, in one transaction (DESIGN §14); then the
 * upstream grants, after the commit.
 */
export async function removeAgent(gw: Gateway, clientId: string) {
  const { agent, revoked } = await gw.store.transaction(async (tx) => {
    const agent = await tx.lockAgent(clientId);
    if (!agent) throw notFound(clientId);
    const revoked = await tx.revokeTokensWhere({ client_id: clientId }, gw.now());
    await tx.deleteAgent(clientId);
    return { agent, revoked };
  });
  await afterRevocation(gw, revoked, "admin");
  await audit(gw, "agent.deleted", { client_id: clientId, agent_id: agent.agent_id, data: { by: "admin", tokens_revoked: revoked.length } });
  return { client_id: clientId, deleted: true, tokens_revoked: revoked.length };
}

// internal

async function find(gw: Gateway, clientId: string): Promise<AgentRecord> {
  const agent = await gw.store.getAgentByClientId(clientId);
  if (!agent) throw notFound(clientId);
  return agent;
}

function notFound(clientId: string): AthError {
  return new AthError("NOT_FOUND", `No agent with client_id '${clientId}'`, { client_id: clientId });
}

/** Never the secret hash; what it asked for is its approved and denied scopes together, per provider. */
export function view(a: AgentRecord): AdminAgent {
  return {
    client_id: a.client_id,
    agent_id: a.agent_id,
    developer: a.developer,
    purpose: a.purpose,
    redirect_uris: a.redirect_uris,
    agent_status: a.status,
    requested_providers: a.approvals.map((p) => ({ provider_id: p.provider_id, scopes: [...p.approved_scopes, ...p.denied_scopes] })),
    approved_providers: a.approvals,
    approval_expires: new Date(a.approval_expires).toISOString(),
    created_at: new Date(a.created_at).toISOString(),
    approval_rules: a.approval_rules ?? [],
  };
}
