/**
 * Every admin decision of a front end (`ath admin …`), over agent/admin.ts: which gateway and token, and one call
 * per verb, each answer read with its wire schema (protocol/admin.ts). Commands only read flags and render.
 */
import {
  adminCall,
  adminStream,
  adminToken,
  fetchAuditKey,
  followAudit,
  login as saveLogin,
  logout as forget,
  query,
  type AdminTarget,
  type AuditEventView,
} from "../admin.ts";
import type { z } from "zod";
import { usageError } from "../errors.ts";
import {
  AdminAgent,
  AdminAgentChanged,
  AdminAgentList,
  AdminAgentRemoved,
  AdminApproval,
  AdminApprovalList,
  AdminAuditPage,
  AdminBudgetList,
  AdminMcpFederation,
  AdminProvider,
  AdminProviderList,
  AdminProviderRemoved,
  AdminTokenList,
  AdminTokensRevoked,
  AdminWebhook,
  AdminWebhookList,
  AdminWebhookRemoved,
  isApprovalId,
  type AdminAgent as Agent_,
} from "../../protocol/admin.ts";
import { PATHS } from "../../protocol/constants.ts";
import { AdminTrustedIssuer, AdminTrustedIssuerList, AdminTrustedIssuerRemoved } from "../../protocol/identity.ts";
import { ApprovalRules, BudgetRules, PolicyRules, type ApprovalRule, type BudgetRule, type PolicyRule } from "../../protocol/provider-config.ts";
import { formatIssues } from "../../protocol/lean.ts";
import { loadAgent, type Agent, type AgentOptions } from "./agent.ts";

export type { AdminTarget, AuditEventView };

export interface AdminSession {
  agent: Agent;
  target: AdminTarget;
}

/**
 * The gateway (`-g` as every command) and the admin token in force: `token` as given (login), else the flag, else
 * `ATH_ADMIN_TOKEN`, else the saved one; `noToken` for logout, which needs none.
 */
export async function adminSession(
  o: AgentOptions & { env: Record<string, string | undefined>; gateway?: string; adminToken?: string; token?: string; noToken?: boolean },
): Promise<AdminSession> {
  const agent = await loadAgent(o);
  const base = agent.target({ mode: "gateway", ...(o.gateway === undefined ? {} : { gateway: o.gateway }) }).base;
  const token = o.token ?? (o.noToken ? "" : await adminToken(agent.home, base, o.adminToken, o.env));
  return { agent, target: { base, token, http: agent.http } };
}

export const login = (s: AdminSession) => saveLogin(s.agent.home, s.target, s.agent.now);
export const logout = (s: AdminSession) => forget(s.agent.home, s.target.base, s.agent.now);

// providers

export const listProviders = (t: AdminTarget) => adminCall(t, "GET", PATHS.adminProviders, AdminProviderList);
export const getProvider = (t: AdminTarget, id: string) => adminCall(t, "GET", `${PATHS.adminProviders}/${seg(id)}`, AdminProvider);
export const addProvider = (t: AdminTarget, entry: Record<string, unknown>) => adminCall(t, "POST", PATHS.adminProviders, AdminProvider, entry);
export const setProvider = (t: AdminTarget, id: string, entry: Record<string, unknown>) =>
  adminCall(t, "PUT", `${PATHS.adminProviders}/${seg(id)}`, AdminProvider, entry);
export const removeProvider = (t: AdminTarget, id: string) => adminCall(t, "DELETE", `${PATHS.adminProviders}/${seg(id)}`, AdminProviderRemoved);

// agents

/** The agents, `status` ones only when given. */
export async function listAgents(t: AdminTarget, status?: string): Promise<{ agents: Agent_[] }> {
  const answer = await adminCall(t, "GET", PATHS.adminAgents, AdminAgentList);
  return status === undefined ? answer : { ...answer, agents: answer.agents.filter((a) => a.agent_status === status) };
}

export const getAgent = (t: AdminTarget, clientId: string) => adminCall(t, "GET", `${PATHS.adminAgents}/${seg(clientId)}`, AdminAgent);
export const setAgentStatus = (t: AdminTarget, clientId: string, status: "approved" | "denied" | "suspended") =>
  adminCall(t, "PATCH", `${PATHS.adminAgents}/${seg(clientId)}`, AdminAgentChanged, { status });
export const removeAgent = (t: AdminTarget, clientId: string) => adminCall(t, "DELETE", `${PATHS.adminAgents}/${seg(clientId)}`, AdminAgentRemoved);

/** Replaces the agent's own approval rules (DESIGN §15); `[]` clears them. */
export const setAgentRules = (t: AdminTarget, clientId: string, rules: ApprovalRule[]) =>
  adminCall(t, "PATCH", `${PATHS.adminAgents}/${seg(clientId)}`, AdminAgentChanged, { approval_rules: rules });

/**
 * Replaces the agent's own policy rules (DESIGN §16); `[]` clears them. The gateway compiles each `when` and refuses
 * the lot (400 naming the rule, `policy.<i>.when`) when one does not compile.
 */
export const setAgentPolicy = (t: AdminTarget, clientId: string, policy: PolicyRule[]) =>
  adminCall(t, "PATCH", `${PATHS.adminAgents}/${seg(clientId)}`, AdminAgentChanged, { policy });

/** Replaces the agent's own budgets (DESIGN §16); `[]` clears them. */
export const setAgentBudgets = (t: AdminTarget, clientId: string, budgets: BudgetRule[]) =>
  adminCall(t, "PATCH", `${PATHS.adminAgents}/${seg(clientId)}`, AdminAgentChanged, { budgets });

/** Approval rules from a document: a JSON array of rules, or an object holding one as `approval_rules`. */
export const parseRules = (value: unknown, where: string): ApprovalRule[] => parseList(ApprovalRules, "approval_rules", "approval rules", value, where);

/** Policy rules from a document: a JSON array of rules, or an object holding one as `policy`. */
export const parsePolicy = (value: unknown, where: string): PolicyRule[] => parseList(PolicyRules, "policy", "policy rules", value, where);

/** Budgets from a document: a JSON array of budgets, or an object holding one as `budgets`. */
export const parseBudgets = (value: unknown, where: string): BudgetRule[] => parseList(BudgetRules, "budgets", "budgets", value, where);

/** A list read with `schema`: the document itself, or its `key` when it is an object (an agent's view as `get` prints it). */
function parseList<T>(schema: z.ZodType<T>, key: string, what: string, value: unknown, where: string): T {
  const list = value !== null && typeof value === "object" && !Array.isArray(value) && key in value ? (value as Record<string, unknown>)[key] : value;
  const parsed = schema.safeParse(list);
  if (!parsed.success) throw usageError(`${where} is not a list of ${what}: ${formatIssues(parsed.error).join("; ")}`);
  return parsed.data;
}

// approvals

export const listApprovals = (t: AdminTarget, q: { status?: string; limit?: number; cursor?: string }) =>
  adminCall(t, "GET", `${PATHS.adminApprovals}${query(q)}`, AdminApprovalList);

export function decideApproval(t: AdminTarget, approvalId: string, decision: "approve" | "deny") {
  if (!isApprovalId(approvalId)) throw usageError(`"${approvalId}" is not an approval id (ath_apr_…)`);
  return adminCall(t, "POST", `${PATHS.adminApprovals}/${seg(approvalId)}`, AdminApproval, { decision });
}

// tokens

export type TokenFilters = { agent_id?: string; client_id?: string; user_id?: string; provider_id?: string };

export const listTokens = (t: AdminTarget, q: TokenFilters & { state?: string; limit?: number; cursor?: string }) =>
  adminCall(t, "GET", `${PATHS.adminTokens}${query(q)}`, AdminTokenList);

export type RevokeSelector = TokenFilters & { token_id?: string };

/** A selector naming at least one thing: revoking "everything" by omission is a usage error. */
export function checkRevokeSelector(selector: RevokeSelector): RevokeSelector {
  const named = Object.values(selector).some((v) => v !== undefined);
  if (!named) throw usageError("say which tokens: a token_id, or --agent-id, --client-id, --user-id, --provider (ANDed)");
  return selector;
}

export function revokeTokens(t: AdminTarget, selector: RevokeSelector) {
  return adminCall(t, "POST", PATHS.adminTokensRevoke, AdminTokensRevoked, checkRevokeSelector(selector));
}

// audit

export type AuditFilters = TokenFilters & { type?: string; since?: string; until?: string };

export const listAudit = (t: AdminTarget, q: AuditFilters & { limit?: number; cursor?: string }) =>
  adminCall(t, "GET", `${PATHS.adminAudit}${query(q)}`, AdminAuditPage);

export { followAudit };

// internal

/** A path segment: ids are percent-encoded, so `../x` stays one segment. */
function seg(v: string): string {
  return encodeURIComponent(v);
}

// webhooks (DESIGN §20)

export const listWebhooks = (t: AdminTarget) => adminCall(t, "GET", PATHS.adminWebhooks, AdminWebhookList);
export const addWebhook = (t: AdminTarget, w: { url: string; events: string[]; secret: string }) => adminCall(t, "POST", PATHS.adminWebhooks, AdminWebhook, w);
export const removeWebhook = (t: AdminTarget, id: string) => adminCall(t, "DELETE", `${PATHS.adminWebhooks}/${seg(id)}`, AdminWebhookRemoved);

// budgets (DESIGN §16)

export const listBudgets = (t: AdminTarget, q: { client_id?: string; provider_id?: string }) =>
  adminCall(t, "GET", `${PATHS.adminBudgets}${query(q)}`, AdminBudgetList);

// one MCP URL for many servers (DESIGN §22)

/** The federated MCP URLs, their members, and which members each person connected. */
export const mcpFederation = (t: AdminTarget) => adminCall(t, "GET", PATHS.adminMcp, AdminMcpFederation);

// the audit chain (DESIGN §20): the export streamed as it comes, the public key

export const exportAudit = (t: AdminTarget, since: string | undefined, onChunk: (chunk: Uint8Array) => void) =>
  adminStream(t, `${PATHS.adminAuditExport}${query({ since })}`, onChunk);
export const auditKey = (t: AdminTarget) => fetchAuditKey(t.base, t.http);

// trusted issuers (DESIGN §23)

export const listIssuers = (t: AdminTarget) => adminCall(t, "GET", PATHS.adminTrustedIssuers, AdminTrustedIssuerList);
export const addIssuer = (t: AdminTarget, entry: Record<string, unknown>) => adminCall(t, "POST", PATHS.adminTrustedIssuers, AdminTrustedIssuer, entry);
/** The issuer is one path segment: its URL percent-encoded whole (DESIGN §23 "Pinned"). */
export const removeIssuer = (t: AdminTarget, issuer: string) => adminCall(t, "DELETE", `${PATHS.adminTrustedIssuers}/${seg(issuer)}`, AdminTrustedIssuerRemoved);
