/**
 * The admin API for agents: list, read, and change an agent's status. This is what makes `--approval manual`
 * usable: a pending agent waits until an admin sets it `approved`. Denying, suspending or removing an agent revokes
 * every token it holds at once.
 */
import type { z } from "zod";
import { AdminAgentPatch, type AdminAgent } from "../../protocol/admin.ts";
import { ApprovalRules, AthError, type BudgetRules, type PolicyRules } from "../../protocol/index.ts";
import { requireConditions } from "../rules/conditions.ts";
import type { AgentRecord } from "../../store/types.ts";
import { audit } from "../domain/audit.ts";
import { afterRevocation } from "../domain/tokens.ts";
import { approvePending } from "../rules/policy.ts";
import type { Call, Gateway } from "../context.ts";
import { parseWith, readJson } from "../http/request.ts";
import { json } from "../http/response.ts";

export async function list({ gw }: Call): Promise<Response> {
  return json({ agents: (await gw.store.listAgents()).map(view) });
}

export async function get({ gw, params }: Call): Promise<Response> {
  return json(view(await find(gw, params.client_id!)));
}

export async function patch(call: Call): Promise<Response> {
  const { status, approval_rules, policy, budgets, approved_providers } = await readJson(call, AdminAgentPatch);
  const clientId = call.params.client_id!;
  requireConditions(policy, "policy");
  if (approval_rules !== undefined) await setApprovalRules(call.gw, clientId, approval_rules);
  if (policy !== undefined || budgets !== undefined) await setPolicy(call.gw, clientId, { policy, budgets });
  if (approved_providers !== undefined) {
    const replaced = await replaceApprovedScopes(call.gw, clientId, approved_providers);
    if (status === undefined) return json(replaced);
  }
  return json(status !== undefined ? await setAgentStatus(call.gw, clientId, status) : view(await find(call.gw, clientId)));
}

/** The agent as the API shows it, by client_id (404 NOT_FOUND when there is none). */
export async function agentByClientId(gw: Gateway, clientId: string): Promise<AdminAgent> {
  return view(await find(gw, clientId));
}

/** The agent's own lists an admin replaces (DESIGN §15, §16). */
export const AGENT_LISTS = ["approval_rules", "policy", "budgets"] as const;
export type AgentList = (typeof AGENT_LISTS)[number];

/**
 * Replaces one of the agent's own lists from a value as it came (the console's form): checked as PATCH's body is —
 * 400 INVALID_REQUEST naming the field, and for `policy` the first rule whose `when` does not compile.
 */
export async function setAgentList(gw: Gateway, clientId: string, key: AgentList, value: unknown): Promise<void> {
  const body = parseWith(AdminAgentPatch, { [key]: value });
  requireConditions(body.policy, "policy");
  if (body.approval_rules !== undefined) await setApprovalRules(gw, clientId, body.approval_rules);
  else await setPolicy(gw, clientId, { policy: body.policy, budgets: body.budgets });
}

/** Replaces the agent's own approval rules (added to its providers' at the proxy). */
export async function setApprovalRules(gw: Gateway, clientId: string, rules: z.output<typeof ApprovalRules>) {
  const agent = await find(gw, clientId);
  await gw.store.updateAgent(clientId, { approval_rules: rules.length ? rules : null });
  await audit(gw, "agent.approval_rules_set", { client_id: clientId, agent_id: agent.agent_id, data: { by: "admin", rules: rules.length } });
}

/** Replaces the agent's own policy rules and/or budgets (added after its providers' at the proxy). */
export async function setPolicy(gw: Gateway, clientId: string, p: { policy?: z.output<typeof PolicyRules>; budgets?: z.output<typeof BudgetRules> }) {
  const agent = await find(gw, clientId);
  await gw.store.updateAgent(clientId, {
    ...(p.policy === undefined ? {} : { policy: p.policy.length ? p.policy : null }),
    ...(p.budgets === undefined ? {} : { budgets: p.budgets.length ? p.budgets : null }),
  });
  await audit(gw, "agent.policy_set", { client_id: clientId, agent_id: agent.agent_id, data: { by: "admin", policy: p.policy?.length ?? null, budgets: p.budgets?.length ?? null } });
}

/**
 * Approves, denies or suspends an agent (the API's PATCH and the console's buttons). One transaction (DESIGN §14): the
 * agent row locked, its status changed and — denied or suspended — its tokens revoked together, so a token being
 * issued meanwhile (which locks the same row) is either refused or revoked here. The upstream grants go after the
 * commit, as /ath/revoke's would (that calls the provider).
 */
export async function setAgentStatus(gw: Gateway, clientId: string, status: "approved" | "denied" | "suspended") {
  const { agent, revoked } = await gw.store.transaction(async (tx) => {
    const found = await tx.lockAgent(clientId);
    if (!found) throw notFound(clientId);
    let agent = found;
    // Approving approves the additions the agent asked for since (DESIGN §17) too.
    if (status === "approved" && found.pending_approvals?.length) {
      agent = { ...found, approvals: approvePending(found.approvals, found.pending_approvals), pending_approvals: null };
      await tx.updateAgent(clientId, { status, approvals: agent.approvals, pending_approvals: null });
    } else await tx.updateAgent(clientId, { status });
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

/**
 * Replaces the agent's approved scopes (DESIGN §17): providers left out keep nothing. In one transaction with the
 * agent row locked, every live token holding a scope no longer approved is revoked with its refresh family.
 */
export async function replaceApprovedScopes(gw: Gateway, clientId: string, wanted: { provider_id: string; scopes: string[] }[]) {
  const { agent, revoked } = await gw.store.transaction(async (tx) => {
    const agent = await tx.lockAgent(clientId);
    if (!agent) throw notFound(clientId);
    const approvals = wanted.map((w) => {
      const before = agent.approvals.find((a) => a.provider_id === w.provider_id);
      const denied = (before?.denied_scopes ?? []).filter((s) => !w.scopes.includes(s));
      return { provider_id: w.provider_id, approved_scopes: [...new Set(w.scopes)], denied_scopes: denied, ...(denied.length && before?.denial_reason ? { denial_reason: before.denial_reason } : {}) };
    });
    const allowed = (providerId: string) => new Set(approvals.find((a) => a.provider_id === providerId)?.approved_scopes ?? []);
    const live = await tx.listTokens({ client_id: clientId }, { state: "active", now: gw.now(), limit: 10_000 });
    const revoked = [];
    for (const t of live.filter((t) => t.scopes.some((s) => !allowed(t.provider_id).has(s)))) {
      revoked.push(...(await tx.revokeTokensWhere({ token_id: t.token_id }, gw.now())));
    }
    await tx.updateAgent(clientId, { approvals });
    return { agent: { ...agent, approvals }, revoked };
  });
  await afterRevocation(gw, revoked, "admin");
  await audit(gw, "agent.scopes_replaced", { client_id: clientId, agent_id: agent.agent_id, data: { by: "admin", approved_providers: wanted, tokens_revoked: revoked.length } });
  return { ...view(agent), tokens_revoked: revoked.length };
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
    policy: a.policy ?? [],
    budgets: a.budgets ?? [],
    pending_providers: a.pending_approvals ?? [],
  };
}
