/**
 * `ath token --code X [--session S]`: exchange the agent code for a token (Phase B, RFC 6749 §4.1.3) and save it.
 * Without `--session` the only unexpired pending session from `ath authorize` is used (several: exit 3). A code
 * this home already exchanged is not sent again: the token it gave is printed, with `already_exchanged`.
 */
import { exchange, type ExchangeInput, type Exchanged } from "../../agent/flows/exchange.ts";
import { reveal } from "../../agent/mask.ts";
import { commonOptions, context, single, text, type CommonOptions } from "../kit/common.ts";
import { getDeps, type Deps } from "../kit/deps.ts";
import { usageError } from "../kit/errors.ts";
import { commonArgs, defineCommand, showSecretsArg } from "../kit/flags.ts";
import type { Output } from "../kit/render.ts";

export interface TokenOptions extends CommonOptions, Omit<ExchangeInput, "target"> {
  showSecrets: boolean;
}

export async function run(opts: TokenOptions, deps: Deps): Promise<void> {
  if (opts.code === "") throw usageError("token needs --code <code> (from the redirect after the user approved)");
  const ctx = await context(opts, deps);
  const { code, session, provider } = opts;
  const r = await exchange({ target: ctx.target(), code, session, provider }, ctx.agent);
  if (r.already_exchanged && !ctx.out.json) {
    ctx.out.info(`this code was already exchanged at ${r.saved.obtained_at}; its token for ${r.saved.provider_id} is saved`);
  }
  renderToken(ctx.out, r, opts.showSecrets, deps.now());
}

/** The token summary shared by `token` and `authorize --wait`: the token itself masked unless asked. */
export function renderToken(out: Output, r: Exchanged, show: boolean, now: number): void {
  const res = r.response;
  if (out.json) {
    return out.doc({ ...res, access_token: reveal(res.access_token, show), expires_at: r.saved.expires_at, ...(r.already_exchanged ? { already_exchanged: true } : {}) });
  }
  const si = res.scope_intersection;
  out.success(`token for ${res.provider_id} saved`);
  out.table([
    ["provider", res.provider_id],
    ["access_token", reveal(res.access_token, show)],
    ["expires_at", out.time(r.saved.expires_at, now)],
    ["effective_scopes", res.effective_scopes.join(",")],
    ["agent_approved", si.agent_approved.join(",")],
    ["user_consented", si.user_consented.join(",")],
  ]);
}

const args = {
  ...commonArgs,
  code: { type: "string", description: "Authorization code from the redirect", required: true },
  session: { type: "string", description: "ath_session_id (default: the pending one)", valueHint: "ath_sess_…" },
  provider: { type: "string", description: "Pick the pending session of this provider" },
  ...showSecretsArg,
} as const;

export default defineCommand({
  meta: { name: "token", description: "Exchange the code plus session id for a token" },
  args,
  run: ({ args: a, data }) => {
    const o: TokenOptions = { ...commonOptions(data), code: String(a.code ?? ""), showSecrets: a["show-secrets"] === true };
    const session = text(a.session);
    if (session !== undefined) o.session = session;
    const provider = single(data, "provider", "token");
    if (provider !== undefined) o.provider = provider;
    return run(o, getDeps());
  },
});
