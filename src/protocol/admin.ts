/**
 * The admin API's wire objects (DESIGN §9), one zod schema each: what gateway/admin/* answers (its views are typed
 * by these), what the console shows, what `ath admin` and the agent's admin calls (agent/admin.ts) parse — so a field
 * added on one side is seen on the other, and nothing reads an answer through a cast.
 */
import { z } from "zod";
import { AgentStatus, APPROVAL_ID, ProviderApproval } from "./lean.ts";
import { ApprovalRules, BudgetRules, PolicyRules } from "./provider-config.ts";
import { DeveloperInfo } from "./schemas.ts";

export { APPROVAL_ID, isApprovalId } from "./lean.ts";

/** A page of a list: the cursor of the next page, or null on the last one. */
const nextCursor = z.string().nullable();

/** What an agent asked for at registration, per provider (its approved and denied scopes together). */
export const RequestedProvider = z.object({ provider_id: z.string(), scopes: z.array(z.string()) });
export type RequestedProvider = z.infer<typeof RequestedProvider>;

/** An agent as the admin sees it (never its secret's hash). */
export const AdminAgent = z.object({
  client_id: z.string(),
  agent_id: z.string(),
  developer: DeveloperInfo,
  purpose: z.string().nullable(),
  redirect_uris: z.array(z.string()).nullable(),
  agent_status: z.union([AgentStatus, z.literal("suspended")]),
  /** What it asked for (providers and scopes), so an operator approves knowing it. */
  requested_providers: z.array(RequestedProvider),
  approved_providers: z.array(ProviderApproval),
  approval_expires: z.string(),
  created_at: z.string(),
  approval_rules: ApprovalRules,
  /** The agent's own policy rules and budgets (DESIGN §16), after its providers' (absent from older gateways). */
  policy: PolicyRules.default([]),
  budgets: BudgetRules.default([]),
  /** Providers and scopes it asked to add that wait for an admin (DESIGN §17; absent from older gateways). */
  pending_providers: z.array(RequestedProvider).default([]),
});
export type AdminAgent = z.infer<typeof AdminAgent>;
export const AdminAgentList = z.object({ agents: z.array(AdminAgent) });
/** PATCH's answer: the agent, and with a status change the tokens it revoked. */
export const AdminAgentChanged = AdminAgent.extend({ tokens_revoked: z.number().int().optional() });
export const AdminAgentRemoved = z.object({ client_id: z.string(), deleted: z.literal(true), tokens_revoked: z.number().int() });
/**
 * PATCH's body: a status change, the agent's own approval rules (DESIGN §15), policy rules and budgets (§16) — each
 * list replaces the agent's; `[]` clears it — and `approved_providers` (§17: replaces the approved scopes; tokens and
 * refresh families holding a removed scope are revoked); any of them together.
 */
export const AdminAgentPatch = z
  .strictObject({
    status: z.enum(["approved", "denied", "suspended"]).optional(),
    approval_rules: ApprovalRules.optional(),
    policy: PolicyRules.optional(),
    budgets: BudgetRules.optional(),
    approved_providers: z.array(z.strictObject({ provider_id: z.string().min(1).max(256), scopes: z.array(z.string().min(1).max(512)).max(100) })).max(50).optional(),
  })
  .refine((p) => p.status !== undefined || p.approval_rules !== undefined || p.policy !== undefined || p.budgets !== undefined || p.approved_providers !== undefined, {
    message: "give status, approval_rules, policy, budgets or approved_providers (or several)",
  });

export const APPROVAL_STATUSES = ["pending", "approved", "denied", "expired", "used"] as const;
/** A per-request approval (DESIGN §15) as the admin sees it. */
export const AdminApproval = z.object({
  approval_id: z.string().regex(APPROVAL_ID),
  client_id: z.string(),
  agent_id: z.string(),
  user_id: z.string(),
  provider_id: z.string(),
  approver: z.enum(["user", "admin"]),
  method: z.string(),
  path: z.string(),
  query: z.string(),
  request_digest: z.string(),
  body_bytes: z.number().int(),
  status: z.enum(APPROVAL_STATUSES),
  created_at: z.string(),
  expires_at: z.string(),
  decided_at: z.string().nullable(),
  decided_by: z.string().nullable(),
});
export type AdminApproval = z.infer<typeof AdminApproval>;
export const AdminApprovalList = z.object({ approvals: z.array(AdminApproval), next_cursor: nextCursor });
export const AdminDecision = z.object({ decision: z.enum(["approve", "deny"]) });

export const AdminToken = z.object({
  token_id: z.string(),
  client_id: z.string(),
  agent_id: z.string(),
  user_id: z.string(),
  provider_id: z.string(),
  scopes: z.array(z.string()),
  created_at: z.string(),
  expires_at: z.string(),
  revoked_at: z.string().nullable(),
  /**
   * DESIGN §23: a delegated token's chain — its ancestors, nearest first (their token ids, agents and clients) — and
   * its budget share; absent for a token of a grant of its own (and from older gateways).
   */
  delegation: z.object({ chain: z.array(z.object({ token_id: z.string(), agent_id: z.string(), client_id: z.string() })), budget: z.number().int().nullable() }).optional(),
});
export type AdminToken = z.infer<typeof AdminToken>;
export const AdminTokenList = z.object({ tokens: z.array(AdminToken), next_cursor: nextCursor });
export const AdminTokensRevoked = z.object({ revoked: z.number().int() });

export const AdminAuditEvent = z.object({
  id: z.number().int(),
  type: z.string(),
  at: z.string(),
  client_id: z.string().nullable(),
  agent_id: z.string().nullable(),
  user_id: z.string().nullable(),
  provider_id: z.string().nullable(),
  data: z.unknown(),
});
export type AdminAuditEvent = z.infer<typeof AdminAuditEvent>;
export const AdminAuditPage = z.object({ events: z.array(AdminAuditEvent), next_cursor: nextCursor });

/** A provider entry as the admin API shows it: its configuration, the secret masked, and where it came from. */
export const AdminProvider = z.looseObject({
  provider_id: z.string(),
  display_name: z.string().optional(),
  available_scopes: z.array(z.string()).optional(),
  client_secret: z.string(),
  source: z.string(),
});
export type AdminProvider = z.infer<typeof AdminProvider>;
export const AdminProviderList = z.object({ providers: z.array(AdminProvider) });
export const AdminProviderRemoved = z.object({ provider_id: z.string(), deleted: z.literal(true) });

/** `admin login`/`logout` (the CLI's own answer, not the API's). */
export const AdminLogin = z.object({ gateway: z.string(), logged_in: z.literal(true) });
export const AdminLogout = z.object({ gateway: z.string(), logged_out: z.boolean() });

/** A webhook subscription (DESIGN §20) as the admin sees it (never its secret). */
export const AdminWebhook = z.object({ webhook_id: z.string(), url: z.string(), events: z.array(z.string()), created_at: z.string() });
export type AdminWebhook = z.infer<typeof AdminWebhook>;
export const AdminWebhookList = z.object({ webhooks: z.array(AdminWebhook) });
export const AdminWebhookRemoved = z.object({ webhook_id: z.string(), deleted: z.literal(true) });

/** Budget usage (DESIGN §16): one row per budget, agent (and user) and window. */
export const AdminBudgetUsage = z.object({
  provider_id: z.string(),
  client_id: z.string(),
  user_id: z.string().nullable(),
  rule: z.string(),
  used: z.number().int(),
  limit: z.number().int(),
  remaining: z.number().int(),
  window_start: z.string(),
  resets_at: z.string(),
});
export const AdminBudgetList = z.object({ budgets: z.array(AdminBudgetUsage) });

/**
 * One MCP URL for many servers (DESIGN §22): each federated URL — `/mcp` (`group: null`) and each group's — its
 * members in order with their prefixes, and each person holding a token for it with the members they connected.
 */
export const AdminMcpUrl = z.object({
  group: z.string().nullable(),
  url: z.string(),
  members: z.array(z.object({ provider_id: z.string(), display_name: z.string(), prefix: z.string() })),
  people: z.array(z.object({ client_id: z.string(), user_id: z.string(), connected: z.array(z.string()), missing: z.array(z.string()) })),
});
export type AdminMcpUrl = z.infer<typeof AdminMcpUrl>;
export const AdminMcpFederation = z.object({ urls: z.array(AdminMcpUrl) });

/** The gateway's public audit key (DESIGN §20): an Ed25519 JWK `{kty: "OKP", crv: "Ed25519", x, kid}`. */
export const AdminAuditKey = z.looseObject({ kty: z.literal("OKP"), crv: z.literal("Ed25519"), x: z.string(), kid: z.string() });
