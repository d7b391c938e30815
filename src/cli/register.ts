/**
 * `ath register` (Phase A): ask one gateway for several providers at once and save the client credentials.
 * `--provider a,b --scopes x,y` asks every listed provider for the same scopes (all of a provider's
 * available scopes when `--scopes` is omitted); `--request provider:s1,s2` (repeatable) asks per provider.
 */
import { defineCommand } from "citty";
import { audience, discoverGateway, discoverService, registerAgent } from "../agent/client.ts";
import { ClientError, usageError } from "../agent/errors.ts";
import { findRegistration, readCredentials, updateCredentials } from "../agent/home.ts";
import { attest } from "../agent/identity.ts";
import type { AgentRegistrationRequest, AgentRegistrationResponse, ProviderScopeRequest } from "../protocol/schemas.ts";
import { collect, commonArgs, commonOptions, context, showSecretsArg, splitList, type CommonOptions, type Context } from "./common.ts";
import { getDeps, type Deps } from "./deps.ts";
import { reveal } from "./render.ts";

/** Registered on every registration so `authorize --wait` can use any loopback port (RFC 8252 §7.3). */
export const LOOPBACK_REDIRECT_URI = "http://127.0.0.1/callback";

export interface RegisterOptions extends CommonOptions {
  providers: string[];
  scopes: string[];
  /** `provider:s1,s2` pairs. */
  requests: string[];
  developerName?: string;
  developerId?: string;
  purpose?: string;
  redirectUris: string[];
  showSecrets: boolean;
}

export async function run(opts: RegisterOptions, deps: Deps): Promise<void> {
  const ctx = await context(opts, deps);
  const base = ctx.base();
  const id = await ctx.identity();
  // Read before registering: the client secret is shown once, so a credentials.json that cannot be read (or
  // written) must stop us before the gateway creates a registration we could not save.
  await readCredentials(ctx.home);
  const requested = await requestedProviders(opts, ctx, base);
  const body: AgentRegistrationRequest = {
    agent_id: id.agentId,
    agent_attestation: await attest(id, audience(base, "register")),
    developer: {
      name: opts.developerName ?? ctx.config.developer_name ?? "local",
      id: opts.developerId ?? ctx.config.developer_id ?? id.agentId,
    },
    requested_providers: requested,
    redirect_uris: [...new Set([LOOPBACK_REDIRECT_URI, ...opts.redirectUris])],
    ...(opts.purpose === undefined ? {} : { purpose: opts.purpose }),
  };
  let res: AgentRegistrationResponse;
  try {
    res = await registerAgent(base, body, ctx.http);
  } catch (e) {
    if (!(e instanceof ClientError) || e.code !== "AGENT_ALREADY_REGISTERED") throw e;
    const saved = findRegistration(await readCredentials(ctx.home), base, id.agentId);
    if (saved === undefined) {
      throw new ClientError(
        "refused",
        e.code,
        `${id.agentId} is already registered at ${base}, but no credentials for it are saved in ${ctx.home.dir}: ` +
          "use the ATH_HOME that registered it, another identity (--agent-id/--key), or ask the gateway admin to remove the registration",
        { ...(e.status === undefined ? {} : { status: e.status }) },
      );
    }
    // The gateway kept the first registration: the scopes asked for now were not sent again, and an agent must not
    // read exit 0 as "my new scopes were granted".
    if (ctx.out.json) {
      return ctx.out.doc({ already_registered: true, scopes_changed: false, gateway: base, agent_id: id.agentId, ...summary(saved, opts.showSecrets) });
    }
    ctx.out.info(
      `already registered at ${base} as ${id.agentId} (client ${saved.client_id}); requested scopes were not changed — ` +
        "register with a new agent identity (--agent-id/--key) to change them",
    );
    return;
  }
  await updateCredentials(
    ctx.home,
    (c) => {
      const gw = (c.gateways[base] ??= { agents: {} });
      gw.agents[id.agentId] = { ...res, registered_at: new Date(deps.now()).toISOString(), tokens: {}, pending: {}, exchanged: {} };
    },
    deps.now,
  );
  render(ctx, base, id.agentId, res, opts.showSecrets);
}

// internal

async function requestedProviders(opts: RegisterOptions, ctx: Context, base: string): Promise<ProviderScopeRequest[]> {
  const byProvider = new Map<string, string[]>();
  for (const r of opts.requests) {
    const i = r.indexOf(":");
    if (i <= 0) throw usageError(`--request must be provider:scope1,scope2, got "${r}"`);
    byProvider.set(r.slice(0, i), splitList([r.slice(i + 1)]));
  }
  let providers = opts.providers;
  if (providers.length === 0 && byProvider.size === 0) {
    if (opts.mode !== "native") throw usageError("register needs --provider <id> (or --request provider:scopes); see `ath discover`");
    providers = [(await discoverService(base, ctx.http)).app_id];
  }
  let available: Map<string, string[]> | undefined;
  for (const p of providers) {
    if (opts.scopes.length > 0) {
      byProvider.set(p, opts.scopes);
      continue;
    }
    available ??= await availableScopes(opts, ctx, base);
    const all = available.get(p);
    if (all === undefined) throw usageError(`provider "${p}" is not offered at ${base}: pass --scopes, or see \`ath discover\``);
    byProvider.set(p, all);
  }
  return [...byProvider].map(([provider_id, scopes]) => ({ provider_id, scopes }));
}

async function availableScopes(opts: RegisterOptions, ctx: Context, base: string): Promise<Map<string, string[]>> {
  if (opts.mode === "native") {
    const doc = await discoverService(base, ctx.http);
    return new Map([[doc.app_id, doc.auth.scopes_supported]]);
  }
  const doc = await discoverGateway(base, ctx.http);
  return new Map(doc.supported_providers.map((p) => [p.provider_id, p.available_scopes]));
}

function summary(r: Pick<AgentRegistrationResponse, "client_id" | "client_secret" | "agent_status" | "approved_providers" | "approval_expires">, show: boolean) {
  return {
    client_id: r.client_id,
    client_secret: reveal(r.client_secret, show),
    agent_status: r.agent_status,
    approved_providers: r.approved_providers,
    approval_expires: r.approval_expires,
  };
}

function render(ctx: Context, base: string, agentId: string, res: AgentRegistrationResponse, show: boolean): void {
  const { out } = ctx;
  if (out.json) return out.doc({ gateway: base, agent_id: agentId, ...summary(res, show) });
  const status = res.agent_status === "approved" ? out.paint.green(res.agent_status) : out.paint.yellow(res.agent_status);
  if (out.tty) out.line(`${status} at ${base} as ${agentId}`);
  out.table([
    ["client_id", res.client_id],
    ["client_secret", reveal(res.client_secret, show)],
    ["agent_status", out.tty ? status : res.agent_status],
    ["approval_expires", out.time(res.approval_expires, ctx.deps.now())],
  ]);
  out.table(
    res.approved_providers.map((p) => [
      p.provider_id,
      `approved=${p.approved_scopes.join(",")}`,
      `denied=${p.denied_scopes.join(",")}`,
      ...(p.denial_reason === undefined ? [] : [p.denial_reason]),
    ]),
  );
  if (res.agent_status !== "approved") {
    out.info(res.agent_status === "pending" ? "the gateway admin must approve this agent before `ath authorize`" : "nothing was approved: see the denial reasons above");
  }
}

export default defineCommand({
  meta: { name: "register", description: "Register the agent at the gateway (Phase A)" },
  args: {
    ...commonArgs,
    provider: { type: "string", description: "Provider id; repeatable or comma-separated", valueHint: "id" },
    scopes: { type: "string", description: "Comma-separated scopes (default: all the provider offers)", valueHint: "a,b" },
    request: { type: "string", description: "provider:scope1,scope2 — per-provider scopes; repeatable", valueHint: "p:a,b" },
    "developer-name": { type: "string", description: "Developer name (default: config, else \"local\")" },
    "developer-id": { type: "string", description: "Developer id (default: config, else the agent id)" },
    purpose: { type: "string", description: "Why the agent needs access" },
    "redirect-uri": { type: "string", description: "Extra redirect URI; repeatable" },
    ...showSecretsArg,
  },
  run: ({ args, rawArgs }) => {
    const str = (v: unknown) => (typeof v === "string" && v !== "" ? v : undefined);
    const o: RegisterOptions = {
      ...commonOptions(args),
      providers: splitList(collect(rawArgs, ["provider"])),
      scopes: splitList(collect(rawArgs, ["scopes"])),
      requests: collect(rawArgs, ["request"]),
      redirectUris: collect(rawArgs, ["redirect-uri"]),
      showSecrets: args["show-secrets"] === true,
    };
    const [dn, di, pu] = [str(args["developer-name"]), str(args["developer-id"]), str(args.purpose)];
    if (dn !== undefined) o.developerName = dn;
    if (di !== undefined) o.developerId = di;
    if (pu !== undefined) o.purpose = pu;
    return run(o, getDeps());
  },
});
