/** `ath revoke --provider <id> | --all`: revoke saved tokens at the gateway (POST /ath/revoke) and forget them. */
import { revoke } from "../../agent/flows/revoke.ts";
import { commonOptions, context, list, type CommonOptions } from "../kit/common.ts";
import { getDeps, type Deps } from "../kit/deps.ts";
import { usageError } from "../kit/errors.ts";
import { commonArgs, defineCommand } from "../kit/flags.ts";

export interface RevokeOptions extends CommonOptions {
  providers: string[];
  all: boolean;
}

export async function run(opts: RevokeOptions, deps: Deps): Promise<void> {
  if (opts.all && opts.providers.length > 0) throw usageError("pass --provider or --all, not both");
  const ctx = await context(opts, deps);
  const { gateway, revoked } = await revoke({ target: ctx.target(), providers: opts.all ? "all" : opts.providers }, ctx.agent);
  if (ctx.out.json) return ctx.out.doc({ gateway, revoked });
  ctx.out.success(revoked.length === 0 ? "no saved tokens to revoke" : `revoked ${revoked.join(", ")} at ${gateway}`);
}

const args = {
  ...commonArgs,
  provider: { type: "string", description: "Provider id; repeatable or comma-separated", valueHint: "id" },
  all: { type: "boolean", description: "Revoke every saved token at this gateway", default: false },
} as const;

export default defineCommand({
  meta: { name: "revoke", description: "Revoke the saved token of a provider (or all) and forget it" },
  args,
  run: ({ args: a, data }) => run({ ...commonOptions(data), providers: list(data, "provider"), all: a.all === true }, getDeps()),
});
