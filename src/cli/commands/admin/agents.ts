/**
 * `ath admin agents list|get|approve|deny|suspend|remove`, and the agent's own rules: `ath admin agents rules|policy|budgets
 * show|set|clear`.
 */
import {
  getAgent,
  listAgents,
  parseBudgets,
  parsePolicy,
  parseRules,
  removeAgent,
  setAgentBudgets,
  setAgentPolicy,
  setAgentRules,
  setAgentStatus,
} from "../../../agent/flows/admin.ts";
import type { AdminAgent } from "../../../protocol/admin.ts";
import type { Invocation } from "../../kit/flags.ts";
import { readDocument, setup, show, str, table, text, where, type Args } from "./common.ts";

export async function agentsList({ args: a, format }: Invocation): Promise<void> {
  const c = await setup(a, format);
  const answer = await listAgents(c.target, text(a.status));
  if (c.out.json) return c.out.doc(answer);
  // pending first (agents, or additions they asked for, DESIGN §17): they are what an operator acts on
  const waiting = (x: AdminAgent) => x.agent_status === "pending" || x.pending_providers.length > 0;
  const agents = [...answer.agents].sort((x, y) => Number(waiting(y)) - Number(waiting(x)));
  const pendingOf = (x: AdminAgent) => x.pending_providers.map((p) => `${p.provider_id}:${p.scopes.join(",")}`).join(" ") || "-";
  const rows = agents.map((x) => [x.client_id, x.agent_status, x.agent_id, str(x.developer.name), str(x.purpose), requested(x), x.created_at, pendingOf(x)]);
  table(c.out, ["CLIENT_ID", "STATUS", "AGENT_ID", "DEVELOPER", "PURPOSE", "REQUESTED", "CREATED", "PENDING"], rows);
}

export async function agentsGet({ args: a, format }: Invocation): Promise<void> {
  const c = await setup(a, format);
  show(c.out, await getAgent(c.target, str(a.id)));
}

export async function agentStatus({ args: a, format }: Invocation, verb: "approve" | "deny" | "suspend"): Promise<void> {
  const status = ({ approve: "approved", deny: "denied", suspend: "suspended" } as const)[verb];
  const c = await setup(a, format);
  const answer = await setAgentStatus(c.target, str(a.id), status);
  if (c.out.json) return c.out.doc(answer);
  const revoked = answer.tokens_revoked ?? 0;
  c.out.success(`agent ${str(a.id)} ${status}${revoked > 0 ? `; ${revoked} token(s) revoked` : ""}`);
}

export async function agentsRemove({ args: a, format }: Invocation): Promise<void> {
  const c = await setup(a, format);
  const answer = await removeAgent(c.target, str(a.id));
  if (c.out.json) return c.out.doc(answer);
  c.out.success(`agent ${str(a.id)} removed; ${answer.tokens_revoked} token(s) revoked`);
}

// rules (DESIGN §15: the agent's own approval rules, added to its providers' at the proxy)

export async function rulesShow({ args: a, format }: Invocation): Promise<void> {
  const c = await setup(a, format);
  const agent = await getAgent(c.target, str(a.id));
  if (c.out.json) return c.out.doc({ client_id: agent.client_id, approval_rules: agent.approval_rules });
  if (agent.approval_rules.length === 0) return c.out.info(`agent ${agent.client_id} has no approval rules of its own`);
  c.out.line(JSON.stringify(agent.approval_rules, null, 2));
}

export async function rulesSet({ args: a, format }: Invocation): Promise<void> {
  const file = str(a.file);
  const rules = parseRules(await readDocument(file), where(file));
  const c = await setup(a, format);
  const answer = await setAgentRules(c.target, str(a.id), rules);
  if (c.out.json) return c.out.doc({ client_id: answer.client_id, approval_rules: answer.approval_rules });
  c.out.success(`agent ${answer.client_id}: ${answer.approval_rules.length} approval rule(s) set`);
}

export async function rulesClear({ args: a, format }: Invocation): Promise<void> {
  const c = await setup(a, format);
  const answer = await setAgentRules(c.target, str(a.id), []);
  if (c.out.json) return c.out.doc({ client_id: answer.client_id, approval_rules: answer.approval_rules });
  c.out.success(`agent ${answer.client_id}: approval rules cleared`);
}

// policy and budgets (DESIGN §16: the agent's own, checked after its providers' at the proxy)

export const policyShow = (inv: Invocation) => listShow(inv, "policy", "policy rules");
export const budgetsShow = (inv: Invocation) => listShow(inv, "budgets", "budgets");

export async function policySet({ args: a, format }: Invocation): Promise<void> {
  const file = str(a.file);
  const policy = parsePolicy(await readDocument(file), where(file));
  const c = await setup(a, format);
  const answer = await setAgentPolicy(c.target, str(a.id), policy);
  if (c.out.json) return c.out.doc({ client_id: answer.client_id, policy: answer.policy });
  c.out.success(`agent ${answer.client_id}: ${answer.policy.length} policy rule(s) set`);
}

export async function policyClear({ args: a, format }: Invocation): Promise<void> {
  const c = await setup(a, format);
  const answer = await setAgentPolicy(c.target, str(a.id), []);
  if (c.out.json) return c.out.doc({ client_id: answer.client_id, policy: answer.policy });
  c.out.success(`agent ${answer.client_id}: policy rules cleared`);
}

export async function budgetsSet({ args: a, format }: Invocation): Promise<void> {
  const file = str(a.file);
  const budgets = parseBudgets(await readDocument(file), where(file));
  const c = await setup(a, format);
  const answer = await setAgentBudgets(c.target, str(a.id), budgets);
  if (c.out.json) return c.out.doc({ client_id: answer.client_id, budgets: answer.budgets });
  c.out.success(`agent ${answer.client_id}: ${answer.budgets.length} budget(s) set`);
}

export async function budgetsClear({ args: a, format }: Invocation): Promise<void> {
  const c = await setup(a, format);
  const answer = await setAgentBudgets(c.target, str(a.id), []);
  if (c.out.json) return c.out.doc({ client_id: answer.client_id, budgets: answer.budgets });
  c.out.success(`agent ${answer.client_id}: budgets cleared`);
}

// internal

/** What the agent asked for: `provider:scope,scope provider2:…`. */
/** `show` of one of the agent's lists: json `{client_id, <key>}`, text the list as JSON (a file `set` takes back). */
async function listShow({ args: a, format }: Invocation, key: "policy" | "budgets", what: string): Promise<void> {
  const c = await setup(a, format);
  const agent = await getAgent(c.target, str(a.id));
  if (c.out.json) return c.out.doc({ client_id: agent.client_id, [key]: agent[key] });
  if (agent[key].length === 0) return c.out.info(`agent ${agent.client_id} has no ${what} of its own`);
  c.out.line(JSON.stringify(agent[key], null, 2));
}

function requested(x: AdminAgent): string {
  return x.requested_providers.map((p) => `${p.provider_id}:${p.scopes.join(",")}`).join(" ");
}
