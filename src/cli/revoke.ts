/** `ath revoke --provider <id> | --all`: revoke saved tokens at the gateway (POST /ath/revoke) and forget them. */
import { defineCommand } from "citty";
import { discoverService, revokeToken } from "../agent/client.ts";
import { usageError } from "../agent/errors.ts";
import { updateCredentials } from "../agent/home.ts";
import { requireRegistration, requireToken } from "../agent/tokens.ts";
import { collect, commonArgs, commonOptions, context, splitList, type CommonOptions } from "./common.ts";
import { getDeps, type Deps } from "./deps.ts";

export interface RevokeOptions extends CommonOptions {
  providers: string[];
  all: boolean;
}

export async function run(opts: RevokeOptions, deps: Deps): Promise<void> {
  if (opts.all && opts.providers.length > 0) throw usageError("pass --provider or --all, not both");
  const ctx = await context(opts, deps);
  const base = ctx.base();
  let providers = opts.providers;
  if (providers.length === 0 && !opts.all) {
    if (opts.mode !== "native") throw usageError("revoke needs --provider <id> or --all");
    providers = [(await discoverService(base, ctx.http)).app_id];
  }
  const identity = await ctx.identity();
  const reg = await requireRegistration(ctx.home, base, identity.agentId);
  // --all revokes expired tokens too: the gateway may still hold them, and revoking is harmless.
  const targets = opts.all
    ? Object.values(reg.tokens)
    : providers.map((p) => requireToken(reg, base, p, Number.NEGATIVE_INFINITY));
  const revoked: string[] = [];
  for (const t of targets) {
    await revokeToken(base, { token: t.access_token, client_id: reg.client_id, client_secret: reg.client_secret }, ctx.http);
    await updateCredentials(
      ctx.home,
      (c) => {
        const saved = c.gateways[base]?.agents[identity.agentId]?.tokens;
        if (saved?.[t.provider_id]?.access_token === t.access_token) delete saved[t.provider_id];
      },
      ctx.deps.now,
    );
    revoked.push(t.provider_id);
  }
  if (ctx.out.json) return ctx.out.doc({ gateway: base, revoked });
  ctx.out.success(revoked.length === 0 ? "no saved tokens to revoke" : `revoked ${revoked.join(", ")} at ${base}`);
}

export default defineCommand({
  meta: { name: "revoke", description: "Revoke the saved token of a provider (or all) and forget it" },
  args: {
    ...commonArgs,
    provider: { type: "string", description: "Provider id; repeatable or comma-separated", valueHint: "id" },
    all: { type: "boolean", description: "Revoke every saved token at this gateway", default: false },
  },
  run: ({ args, rawArgs }) =>
    run({ ...commonOptions(args), providers: splitList(collect(rawArgs, ["provider"])), all: args.all === true }, getDeps()),
});
