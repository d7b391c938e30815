/**
 * `ath admin …`: operating a gateway through its admin API (DESIGN §9) — login/logout, providers, agents, tokens,
 * audit. This module is only the command tree (`ath --help` loads it for its meta); the work, its output and the
 * admin API client load when a subcommand runs (admin-run.ts, agent/admin.ts).
 *
 * The global `--agent-id` names an agent identity elsewhere; under `admin` it is the filter of the same name, and
 * admin commands take only `-g`, `--format` and `--admin-token` of the global flags.
 */
import type { ArgsDef, CommandDef } from "citty";
import { commonArgs, defineCommand } from "../kit/flags.ts";

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

type Run = typeof import("./admin/run.ts");

/** A leaf whose run loads admin-run.ts and calls `fn` with the parsed args and raw argv. */
function leaf(name: string, description: string, args: ArgsDef, fn: (m: Run, a: Record<string, unknown>, raw: string[]) => Promise<void>): CommandDef {
  return defineCommand<ArgsDef>({
    meta: { name, description },
    args: { ...adminArgs, ...args },
    run: async ({ args: a, rawArgs }) => fn(await import("./admin/run.ts"), a as Record<string, unknown>, rawArgs),
  });
}

const id = (what: string) => ({ id: { type: "positional", required: true, description: what } }) as const satisfies ArgsDef;
const agentVerb = (verb: "approve" | "deny" | "suspend") =>
  leaf(verb, `${verb[0]!.toUpperCase()}${verb.slice(1)} an agent${verb === "approve" ? "" : " (its tokens are revoked at once)"}`, id("client_id"), (m, a, r) =>
    m.agentStatus(a, r, verb),
  );

export default defineCommand({
  meta: { name: "admin", description: "Operate a gateway: providers, agents, tokens, audit (needs the admin token)" },
  subCommands: {
    login: leaf("login", "Save the admin token for this gateway (from --token, else stdin); checked first", {
      token: { type: "string", description: "The admin token (else read from stdin)", valueHint: "token" },
    }, (m, a, r) => m.login(a, r)),
    logout: leaf("logout", "Forget the saved admin token of this gateway", {}, (m, a, r) => m.logout(a, r)),
    providers: defineCommand({
      meta: { name: "providers", description: "Providers: list, get, add, set, remove" },
      subCommands: {
        list: leaf("list", "List the providers", {}, (m, a, r) => m.providersList(a, r)),
        get: leaf("get", "Show one provider (its secret masked)", id("provider_id"), (m, a, r) => m.providersGet(a, r)),
        add: leaf("add", "Add a provider from a JSON file ({provider_id, …entry}; - for stdin)", { file: { type: "positional", required: true, description: "file or -" } }, (m, a, r) =>
          m.providersAdd(a, r),
        ),
        set: leaf("set", "Replace a provider's entry from a JSON file (- for stdin)", { ...id("provider_id"), file: { type: "positional", required: true, description: "file or -" } }, (m, a, r) =>
          m.providersSet(a, r),
        ),
        remove: leaf("remove", "Remove a provider", id("provider_id"), (m, a, r) => m.providersRemove(a, r)),
      },
    }),
    agents: defineCommand({
      meta: { name: "agents", description: "Agents: list, get, approve, deny, suspend, remove" },
      subCommands: {
        list: leaf("list", "List agents, pending first", {
          status: { type: "enum", options: ["pending", "approved", "denied", "suspended"], description: "Only agents with this status" },
        }, (m, a, r) => m.agentsList(a, r)),
        get: leaf("get", "Show one agent", id("client_id"), (m, a, r) => m.agentsGet(a, r)),
        approve: agentVerb("approve"),
        deny: agentVerb("deny"),
        suspend: agentVerb("suspend"),
        remove: leaf("remove", "Remove an agent (its tokens are revoked first)", id("client_id"), (m, a, r) => m.agentsRemove(a, r)),
      },
    }),
    tokens: defineCommand({
      meta: { name: "tokens", description: "Tokens: list, revoke" },
      subCommands: {
        list: leaf("list", "List tokens, newest first", {
          ...filterArgs,
          state: { type: "enum", options: ["active", "revoked", "expired"], description: "Only tokens in this state" },
          ...pageArgs,
        }, (m, a, r) => m.tokensList(a, r)),
        revoke: leaf("revoke", "Revoke a token by id, or every live token matching the filters (ANDed)", {
          token_id: { type: "positional", required: false, description: "ath_tkid_…" },
          ...filterArgs,
        }, (m, a, r) => m.tokensRevoke(a, r)),
      },
    }),
    audit: leaf("audit", "Audit events, newest first; --follow streams new ones until Ctrl-C", {
      type: { type: "string", description: "Only this event type (e.g. token.issued)", valueHint: "type" },
      ...filterArgs,
      since: { type: "string", description: "From this time: 30m, 1h, 2d, or ISO 8601", valueHint: "1h|ISO" },
      until: { type: "string", description: "Before this time: 30m, 1h, 2d (ago), or ISO 8601", valueHint: "1h|ISO" },
      ...pageArgs,
      follow: { type: "boolean", description: "Keep printing new events until interrupted", default: false },
    }, (m, a, r) => m.audit(a, r)),
  },
});
