/**
 * `ath register` (Phase A): ask one gateway for several providers at once and save the client credentials.
 * `--provider a,b --scopes x,y` asks every listed provider for the same scopes (all of a provider's
 * available scopes when `--scopes` is omitted); `--request provider:s1,s2` (repeatable) asks per provider.
 */
import { register, type RegisterInput, type Registered } from "../../agent/flows/register.ts";
import { reveal } from "../../agent/mask.ts";
import type { ProviderScopeRequest } from "../../protocol/schemas.ts";
import { commonOptions, context, list, splitList, text, type CommonOptions, type Context } from "../kit/common.ts";
import { getDeps, type Deps } from "../kit/deps.ts";
import { usageError } from "../kit/errors.ts";
import { commonArgs, defineCommand, invocation, showSecretsArg } from "../kit/flags.ts";

export interface RegisterOptions extends CommonOptions, Omit<RegisterInput, "target"> {
  showSecrets: boolean;
}

export async function run(opts: RegisterOptions, deps: Deps): Promise<void> {
  const ctx = await context(opts, deps);
  const { providers, scopes, requests, redirectUris, developerName, developerId, purpose } = opts;
  const r = await register({ target: ctx.target(), providers, scopes, requests, redirectUris, developerName, developerId, purpose }, ctx.agent);
  render(ctx, r, opts.showSecrets);
}

// internal

function render(ctx: Context, r: Registered, show: boolean): void {
  const { out } = ctx;
  const reg = r.registration;
  const summary = {
    client_id: reg.client_id,
    client_secret: reveal(reg.client_secret, show),
    agent_status: reg.agent_status,
    approved_providers: reg.approved_providers,
    approval_expires: reg.approval_expires,
  };
  if (r.already_registered) {
    // DESIGN §17: what this run changed, and the registration as the gateway holds it now (never a stale status).
    const added = r.added ?? [];
    const pending = r.pending_providers ?? [];
    if (out.json) return out.doc({ already_registered: true, scopes_changed: added.length > 0, added, pending_providers: pending, refreshed: r.refreshed === true, ...(r.blocked ? { blocked: true } : {}), gateway: r.gateway, agent_id: r.agent_id, ...summary });
    const sets = (s: { provider_id: string; scopes: string[] }[]) => s.map((p) => `${p.provider_id}:${p.scopes.join(",")}`).join(" ");
    if (r.blocked) {
      out.info(`already registered at ${r.gateway} as ${r.agent_id} (client ${reg.client_id}), and ${reg.agent_status} there: no scopes can be added — ask the gateway's operator, or make a new identity with \`ath identity new\``);
      return out.table([["agent_status", reg.agent_status]]);
    }
    if (r.refreshed !== true) {
      return out.info(`already registered at ${r.gateway} as ${r.agent_id} (client ${reg.client_id}); this gateway cannot add scopes to a registration — make a new identity with \`ath identity new\` to ask for others`);
    }
    out.info(`already registered at ${r.gateway} as ${r.agent_id} (client ${reg.client_id})${added.length || pending.length ? "" : "; nothing new asked for"}`);
    // what changed is the answer here, not a confirmation: printed on a pipe too
    if (added.length) out.info(`added ${sets(added)}`);
    if (pending.length) out.info(`waiting for the gateway's admin: ${sets(pending)} (the operator runs \`ath admin agents approve ${reg.client_id}\`)`);
    out.table([
      ["agent_status", reg.agent_status],
      ...reg.approved_providers.map((p) => [p.provider_id, `approved=${p.approved_scopes.join(",")}`, `denied=${p.denied_scopes.join(",")}`]),
    ]);
    return;
  }
  if (out.json) return out.doc({ gateway: r.gateway, agent_id: r.agent_id, ...summary });
  const status = reg.agent_status === "approved" ? out.paint.green(reg.agent_status) : out.paint.yellow(reg.agent_status);
  if (out.tty) out.line(`${status} at ${r.gateway} as ${r.agent_id}`);
  out.table([
    ["client_id", reg.client_id],
    ["client_secret", summary.client_secret],
    ["agent_status", out.tty ? status : reg.agent_status],
    ["approval_expires", out.time(reg.approval_expires, ctx.deps.now())],
  ]);
  out.table(
    reg.approved_providers.map((p) => [
      p.provider_id,
      `approved=${p.approved_scopes.join(",")}`,
      `denied=${p.denied_scopes.join(",")}`,
      ...(p.denial_reason === undefined ? [] : [p.denial_reason]),
    ]),
  );
  if (reg.agent_status !== "approved") {
    out.info(reg.agent_status === "pending" ? "the gateway admin must approve this agent before `ath authorize`" : "nothing was approved: see the denial reasons above");
  }
}

/** `--request provider:s1,s2` → the provider and its scopes. */
function request(r: string): ProviderScopeRequest {
  const i = r.indexOf(":");
  if (i <= 0) throw usageError(`--request must be provider:scope1,scope2, got "${r}"`);
  return { provider_id: r.slice(0, i), scopes: splitList([r.slice(i + 1)]) };
}

const args = {
  ...commonArgs,
  provider: { type: "string", description: "Provider id; repeatable or comma-separated", valueHint: "id" },
  scopes: { type: "string", description: "Comma-separated scopes (default: all the provider offers)", valueHint: "a,b" },
  request: { type: "string", description: "provider:scope1,scope2 — per-provider scopes; repeatable", valueHint: "p:a,b" },
  "developer-name": { type: "string", description: "Developer name (default: config, else \"local\")" },
  "developer-id": { type: "string", description: "Developer id (default: config, else the agent id)" },
  purpose: { type: "string", description: "Why the agent needs access" },
  "redirect-uri": { type: "string", description: "Extra redirect URI; repeatable" },
  ...showSecretsArg,
} as const;

export default defineCommand({
  meta: { name: "register", description: "Register the agent at the gateway (Phase A)" },
  args,
  run: ({ args: a, data }) => {
    const o: RegisterOptions = {
      ...commonOptions(data),
      providers: list(data, "provider"),
      scopes: list(data, "scopes"),
      requests: invocation(data).values("request").map(request),
      redirectUris: invocation(data).values("redirect-uri"),
      showSecrets: a["show-secrets"] === true,
    };
    const [dn, di, pu] = [text(a["developer-name"]), text(a["developer-id"]), text(a.purpose)];
    if (dn !== undefined) o.developerName = dn;
    if (di !== undefined) o.developerId = di;
    if (pu !== undefined) o.purpose = pu;
    return run(o, getDeps());
  },
});
