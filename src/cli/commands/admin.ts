/**
 * `ath admin …`: operating a gateway through its admin API (DESIGN §9) — login/logout, providers, agents, tokens,
 * audit. This module is only the command tree (`ath --help` loads it for its meta); the work, its output and the
 * admin API client load when a subcommand runs (commands/admin/<noun>.ts, agent/flows/admin.ts).
 *
 * The global `--agent-id` names an agent identity elsewhere; under `admin` it is the filter of the same name, and
 * admin commands take only `-g`, `--format` and `--admin-token` of the global flags.
 */
import type { ArgsDef, CommandDef } from "citty";
import { commonArgs, defineCommand, invocation, type Invocation } from "../kit/flags.ts";

const adminArgs = {
  gateway: commonArgs.gateway,
  format: commonArgs.format,
  "admin-token": { type: "string", description: "The admin token (else ATH_ADMIN_TOKEN, else the one `admin login` saved)", valueHint: "token" },
} as const satisfies ArgsDef;

const filterArgs = {
  "agent-id": { type: "string", description: "Only this agent (its agent_id URI)", valueHint: "uri" },
  "client-id": { type: "string", description: "Only this client_id", valueHint: "id" },
  "user-id": { type: "string", description: "Only this user", valueHint: "id" },
  provider: { type: "string", description: "Only this provider", valueHint: "id" },
} as const satisfies ArgsDef;

const pageArgs = {
  limit: { type: "string", description: "At most this many (1–500, default 100)", valueHint: "n" },
  cursor: { type: "string", description: "The next page: the cursor a previous answer gave", valueHint: "cursor" },
} as const satisfies ArgsDef;

/** The modules of the admin verbs, one per noun (commands/admin/<noun>.ts), loaded when a verb runs. */
const NOUNS = {
  session: () => import("./admin/session.ts"),
  providers: () => import("./admin/providers.ts"),
  agents: () => import("./admin/agents.ts"),
  approvals: () => import("./admin/approvals.ts"),
  tokens: () => import("./admin/tokens.ts"),
  audit: () => import("./admin/audit.ts"),
  webhooks: () => import("./admin/webhooks.ts"),
  budgets: () => import("./admin/budgets.ts"),
  mcp: () => import("./admin/mcp.ts"),
  issuers: () => import("./admin/issuers.ts"),
};
type Nouns = typeof NOUNS;
type Verb = (inv: Invocation) => Promise<void>;

/** A leaf whose run loads its noun's module and calls the verb with the invocation. */
function leaf<N extends keyof Nouns>(
  noun: N,
  name: string,
  description: string,
  args: ArgsDef,
  fn: (m: Awaited<ReturnType<Nouns[N]>>) => Verb,
): CommandDef {
  return defineCommand<ArgsDef>({
    meta: { name, description },
    args: { ...adminArgs, ...args },
    run: async ({ data }) => fn((await NOUNS[noun]()) as Awaited<ReturnType<Nouns[N]>>)(invocation(data)),
  });
}

/** A command that only groups others (`ath admin agents`). */
const group = (name: string, description: string, subCommands: Record<string, CommandDef>) => defineCommand({ meta: { name, description }, subCommands });

const id = (what: string) => ({ id: { type: "positional", required: true, description: what } }) as const satisfies ArgsDef;
const file = { file: { type: "positional", required: true, description: "file or -" } } as const satisfies ArgsDef;
const agentVerb = (verb: "approve" | "deny" | "suspend") =>
  leaf("agents", verb, `${verb[0]!.toUpperCase()}${verb.slice(1)} an agent${verb === "approve" ? "" : " (its tokens are revoked at once)"}`, id("client_id"), (m) =>
    (inv) => m.agentStatus(inv, verb),
  );
const approvalVerb = (verb: "approve" | "deny") =>
  leaf("approvals", verb, `${verb === "approve" ? "Approve" : "Deny"} a request waiting for an admin (its approval id)`, id("approval_id"), (m) =>
    (inv) => m.approvalDecide(inv, verb),
  );

export default defineCommand({
  meta: { name: "admin", description: "Operate a gateway: providers, agents, approvals, tokens, audit, webhooks, budgets, MCP URLs, trusted issuers (needs the admin token)" },
  subCommands: {
    login: leaf("session", "login", "Save the admin token for this gateway (from --token, else stdin); checked first", {
      token: { type: "string", description: "The admin token (else read from stdin)", valueHint: "token" },
    }, (m) => m.login),
    logout: leaf("session", "logout", "Forget the saved admin token of this gateway", {}, (m) => m.logout),
    providers: group("providers", "Providers: list, get, add, set, remove", {
      list: leaf("providers", "list", "List the providers", {}, (m) => m.providersList),
      get: leaf("providers", "get", "Show one provider (its secret masked)", id("provider_id"), (m) => m.providersGet),
      add: leaf("providers", "add", "Add a provider from a JSON file ({provider_id, …entry}; - for stdin)", file, (m) => m.providersAdd),
      set: leaf("providers", "set", "Replace a provider's entry from a JSON file (- for stdin)", { ...id("provider_id"), ...file }, (m) => m.providersSet),
      remove: leaf("providers", "remove", "Remove a provider", id("provider_id"), (m) => m.providersRemove),
    }),
    agents: group("agents", "Agents: list, get, approve, deny, suspend, remove, rules", {
      list: leaf("agents", "list", "List agents, pending first, with the providers and scopes each asked for", {
        status: { type: "enum", options: ["pending", "approved", "denied", "suspended"], description: "Only agents with this status" },
      }, (m) => m.agentsList),
      get: leaf("agents", "get", "Show one agent", id("client_id"), (m) => m.agentsGet),
      approve: agentVerb("approve"),
      deny: agentVerb("deny"),
      suspend: agentVerb("suspend"),
      remove: leaf("agents", "remove", "Remove an agent (its tokens are revoked first)", id("client_id"), (m) => m.agentsRemove),
      rules: group("rules", "The agent's own approval rules (added to its providers'): show, set, clear", {
        show: leaf("agents", "show", "Show the agent's approval rules", id("client_id"), (m) => m.rulesShow),
        set: leaf("agents", "set", "Replace them from a JSON file (a list of rules, or {approval_rules}; - for stdin)", { ...id("client_id"), ...file }, (m) => m.rulesSet),
        clear: leaf("agents", "clear", "Remove them all", id("client_id"), (m) => m.rulesClear),
      }),
      policy: group("policy", "The agent's own policy rules (allow/deny/approve with CEL `when`, after its providers'): show, set, clear", {
        show: leaf("agents", "show", "Show the agent's policy rules", id("client_id"), (m) => m.policyShow),
        set: leaf("agents", "set", "Replace them from a JSON file (a list of rules, or {policy}; - for stdin); a `when` that does not compile is refused", { ...id("client_id"), ...file }, (m) => m.policySet),
        clear: leaf("agents", "clear", "Remove them all", id("client_id"), (m) => m.policyClear),
      }),
      budgets: group("budgets", "The agent's own call budgets (after its providers'): show, set, clear", {
        show: leaf("agents", "show", "Show the agent's budgets", id("client_id"), (m) => m.budgetsShow),
        set: leaf("agents", "set", "Replace them from a JSON file (a list of budgets, or {budgets}; - for stdin)", { ...id("client_id"), ...file }, (m) => m.budgetsSet),
        clear: leaf("agents", "clear", "Remove them all", id("client_id"), (m) => m.budgetsClear),
      }),
    }),
    approvals: group("approvals", "Requests waiting for an admin's approval: list, approve, deny", {
      list: leaf("approvals", "list", "List approvals, newest first", {
        status: { type: "enum", options: ["pending", "approved", "denied", "expired", "used"], description: "Only approvals with this status" },
        ...pageArgs,
      }, (m) => m.approvalsList),
      approve: approvalVerb("approve"),
      deny: approvalVerb("deny"),
    }),
    tokens: group("tokens", "Tokens: list, revoke", {
      list: leaf("tokens", "list", "List tokens, newest first", {
        ...filterArgs,
        state: { type: "enum", options: ["active", "revoked", "expired"], description: "Only tokens in this state" },
        ...pageArgs,
      }, (m) => m.tokensList),
      revoke: leaf("tokens", "revoke", "Revoke a token by id, or every live token matching the filters (ANDed)", {
        token_id: { type: "positional", required: false, description: "ath_tkid_…" },
        ...filterArgs,
      }, (m) => m.tokensRevoke),
    }),
    issuers: group("issuers", "Trusted issuers (enterprise IdPs' ID-JAGs, workload JWTs): list, add, remove", {
      list: leaf("issuers", "list", "List the trusted issuers", {}, (m) => m.issuersList),
      add: leaf("issuers", "add", "Add (or replace) a trusted issuer from a JSON file ({issuer, jwks_uri|jwks, kind, subjects?, audience?}; - for stdin)", file, (m) => m.issuersAdd),
      remove: leaf("issuers", "remove", "Remove a trusted issuer", id("issuer"), (m) => m.issuersRemove),
    }),
    webhooks: group("webhooks", "Webhooks (signed POSTs of agent, token and approval events): list, add, remove", {
      list: leaf("webhooks", "list", "List the webhook subscriptions", {}, (m) => m.webhooksList),
      add: leaf("webhooks", "add", "Subscribe a URL to events; the signing secret (at least 16 characters) is read from stdin", {
        url: { type: "positional", required: true, description: "https:// URL; a receiver on the gateway's own machine (http://127.0.0.1…) only when the gateway runs with --dev" },
        events: { type: "string", required: true, description: "Comma-separated event types, e.g. token.revoked,approval.requested", valueHint: "a,b" },
      }, (m) => m.webhooksAdd),
      remove: leaf("webhooks", "remove", "Remove a webhook subscription", id("webhook_id"), (m) => m.webhooksRemove),
    }),
    budgets: leaf("budgets", "budgets", "Budget usage per agent (and user), budget and window", {
      "client-id": filterArgs["client-id"],
      provider: filterArgs.provider,
    }, (m) => m.budgets),
    mcp: leaf("mcp", "mcp", "The federated MCP URLs (/mcp and each group): their members, and which members each person connected", {}, (m) => m.mcp),
    audit: leaf("audit", "audit", "Audit events, newest first; --follow streams new ones until Ctrl-C. `audit export [--since T]`: the hash chain as JSONL; `audit verify FILE [--key FILE]`: check an export offline; `audit key`: the public audit key", {
      action: { type: "positional", required: false, description: "export | verify | key (none: list events)" },
      file: { type: "positional", required: false, description: "verify: the export file (- for stdin)" },
      key: { type: "string", description: "verify: a trusted audit key (JWK file, or an export's key line)", valueHint: "file" },
      type: { type: "string", description: "Only this event type (e.g. token.issued)", valueHint: "type" },
      ...filterArgs,
      since: { type: "string", description: "From this time: 30m, 1h, 2d, or ISO 8601", valueHint: "1h|ISO" },
      until: { type: "string", description: "Before this time: 30m, 1h, 2d (ago), or ISO 8601", valueHint: "1h|ISO" },
      ...pageArgs,
      follow: { type: "boolean", description: "Keep printing new events until interrupted", default: false },
    }, (m) => m.audit),
  },
});
