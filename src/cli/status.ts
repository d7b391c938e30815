/**
 * `ath status`: configuration, agent identity, registrations, approvals, tokens with time left and pending
 * sessions — read from the home directory only, no network. Secrets are masked (also in json) unless
 * `--show-secrets`.
 */
import { defineCommand } from "citty";
import { oneLine } from "../agent/errors.ts";
import { readCredentials } from "../agent/home.ts";
import { resolveGatewayName } from "../agent/target.ts";
import { commonArgs, commonOptions, context, showSecretsArg, type CommonOptions, type Context } from "./common.ts";
import { getDeps, type Deps } from "./deps.ts";
import { relative, reveal } from "./render.ts";

export interface StatusOptions extends CommonOptions {
  showSecrets: boolean;
}

export async function run(opts: StatusOptions, deps: Deps): Promise<void> {
  const ctx = await context(opts, deps);
  const now = deps.now();
  const only = opts.gateway !== undefined ? resolveGatewayName(opts.gateway, ctx.config) : opts.mode === "native" ? ctx.base() : undefined;
  const creds = await readCredentials(ctx.home);
  const show = opts.showSecrets;
  const registrations = Object.entries(creds.gateways)
    .filter(([base]) => only === undefined || base === only)
    .flatMap(([gateway, g]) =>
      Object.entries(g.agents).map(([agent_id, r]) => ({
        gateway,
        agent_id,
        client_id: r.client_id,
        client_secret: reveal(r.client_secret, show),
        agent_status: r.agent_status,
        approval_expires: r.approval_expires,
        approved_providers: r.approved_providers,
        tokens: Object.values(r.tokens).map((t) => {
          const left = Math.floor((Date.parse(t.expires_at) - now) / 1000);
          return { provider_id: t.provider_id, access_token: reveal(t.access_token, show), effective_scopes: t.effective_scopes, expires_at: t.expires_at, seconds_left: Math.max(0, left), expired: left <= 0 };
        }),
        pending: Object.entries(r.pending).map(([id, p]) => ({ ath_session_id: id, provider_id: p.provider_id, scopes: p.scopes, created_at: p.created_at })),
      })),
    );
  const doc = {
    home: ctx.home.dir,
    default_gateway: ctx.config.default_gateway ?? null,
    gateways: ctx.config.gateways,
    identity: await identity(ctx),
    registrations,
  };
  if (ctx.out.json) return ctx.out.doc(doc);
  render(ctx, doc, now);
}

// internal

/** The identity as far as it can be known: a key that cannot be used is reported (`key_error`), not fatal. */
async function identity(ctx: Context): Promise<{ agent_id: string | null; key_path: string; key_exists: boolean; key_error?: string }> {
  const keyPath = ctx.opts.key ?? ctx.config.key_path ?? ctx.home.defaultKey;
  const keyExists = await Bun.file(keyPath).exists();
  let agentId = ctx.opts.agentId ?? ctx.config.agent_id ?? null;
  // The did:key identity needs the key; status never creates one.
  if (agentId === null && keyExists) {
    try {
      agentId = (await ctx.identity()).agentId;
    } catch (e) {
      if ((e as { code?: string }).code !== "BAD_KEY" && (e as { kind?: string }).kind !== "usage") throw e;
      return { agent_id: null, key_path: keyPath, key_exists: true, key_error: (e as Error).message };
    }
  }
  return { agent_id: agentId, key_path: keyPath, key_exists: keyExists };
}

type Doc = {
  home: string;
  default_gateway: string | null;
  gateways: Record<string, string>;
  identity: Awaited<ReturnType<typeof identity>>;
  registrations: {
    gateway: string;
    agent_id: string;
    client_id: string;
    client_secret: string;
    agent_status: string;
    approval_expires: string;
    approved_providers: { provider_id: string; approved_scopes: string[] }[];
    tokens: { provider_id: string; access_token: string; effective_scopes: string[]; expires_at: string; seconds_left: number; expired: boolean }[];
    pending: { ath_session_id: string; provider_id: string; created_at: string }[];
  }[];
};

function render(ctx: Context, doc: Doc, now: number): void {
  const { out } = ctx;
  const h = (s: string) => (out.tty ? out.paint.bold(s) : s);
  out.table([
    ["home", doc.home],
    ["agent_id", doc.identity.agent_id ?? (doc.identity.key_error === undefined ? "(none yet: run `ath config init`)" : "(unknown: the key cannot be used)")],
    ["key", `${doc.identity.key_path}${doc.identity.key_exists ? "" : " (not created yet)"}`],
    ...(doc.identity.key_error === undefined ? [] : [["key_error", oneLine(doc.identity.key_error)]]),
    ["default_gateway", doc.default_gateway ?? "(none)"],
    ...Object.entries(doc.gateways).map(([name, url]) => ["gateway", `${name}\t${url}`]),
  ]);
  for (const r of doc.registrations) {
    out.line();
    out.line(h(`${r.gateway} as ${r.agent_id}`));
    out.table([
      ["client_id", r.client_id],
      ["client_secret", r.client_secret],
      ["agent_status", r.agent_status],
      ["approval_expires", out.time(r.approval_expires, now)],
      ...r.approved_providers.map((p) => ["approved", `${p.provider_id}\t${p.approved_scopes.join(",")}`]),
      ...r.tokens.map((t) => [
        "token",
        `${t.provider_id}\t${t.access_token}\t${t.effective_scopes.join(",")}\t${t.expires_at}\t${t.expired ? "expired" : relative(t.seconds_left * 1000)}`,
      ]),
      ...r.pending.map((p) => ["pending", `${p.provider_id}\t${p.ath_session_id}\t${p.created_at}`]),
    ]);
  }
  if (doc.registrations.length === 0) out.info("no registrations yet: run `ath register -g <gateway> --provider <id>`");
}

export default defineCommand({
  meta: { name: "status", description: "Show saved credentials and tokens" },
  args: { ...commonArgs, ...showSecretsArg },
  run: ({ args }) => run({ ...commonOptions(args), showSecrets: args["show-secrets"] === true }, getDeps()),
});
