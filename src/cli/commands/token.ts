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
import type { SavedToken } from "../../agent/home.ts";

export interface TokenOptions extends CommonOptions, Omit<ExchangeInput, "target"> {
  showSecrets: boolean;
  /** `--refresh`: refresh the saved token with its refresh token instead of exchanging a code (DESIGN §17). */
  refresh?: boolean;
}

export async function run(opts: TokenOptions, deps: Deps): Promise<void> {
  if (opts.refresh) {
    if (opts.code !== "") throw usageError("token takes --code or --refresh, not both");
    const ctx = await context(opts, deps);
    const { refreshSaved } = await import("../../agent/flows/refresh.ts");
    // asked for when this process started: a refresh another process made since then is the one asked for
    const r = await refreshSaved(ctx.agent, ctx.target().base, opts.provider, Math.floor(performance.timeOrigin));
    return renderRefreshed(ctx.out, r.token, r.refreshed, opts.showSecrets, deps.now());
  }
  if (opts.code === "") throw usageError("token needs --code <code> (from the redirect after the user approved), or --refresh");
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
    const refresh = res.refresh_token === undefined ? {} : { refresh_token: reveal(res.refresh_token, show), refresh_expires_at: r.saved.refresh_expires_at };
    return out.doc({ ...res, access_token: reveal(res.access_token, show), ...refresh, expires_at: r.saved.expires_at, ...(r.already_exchanged ? { already_exchanged: true } : {}) });
  }
  const si = res.scope_intersection;
  out.success(`token for ${res.provider_id} saved`);
  out.table([
    ["provider", res.provider_id],
    ["access_token", reveal(res.access_token, show)],
    ["token_type", res.token_type],
    ["expires_at", out.time(r.saved.expires_at, now)],
    ...(r.saved.refresh_expires_at ? [["refresh_expires_at", out.time(r.saved.refresh_expires_at, now)]] : []),
    ["effective_scopes", res.effective_scopes.join(",")],
    ["agent_approved", si.agent_approved.join(",")],
    ["user_consented", si.user_consented.join(",")],
  ]);
}

/** What `token --refresh` saved: both expiries, the tokens masked unless asked. */
function renderRefreshed(out: Output, t: SavedToken, refreshed: boolean, show: boolean, now: number): void {
  const doc = { ...t, access_token: reveal(t.access_token, show), ...(t.refresh_token ? { refresh_token: reveal(t.refresh_token, show) } : {}), refreshed };
  if (out.json) return out.doc(doc);
  out.success(refreshed ? `token for ${t.provider_id} refreshed and saved` : `token for ${t.provider_id} was just refreshed by another process`);
  out.table([
    ["provider", t.provider_id],
    ["access_token", doc.access_token],
    ["token_type", t.token_type],
    ["expires_at", out.time(t.expires_at, now)],
    ["refresh_expires_at", t.refresh_expires_at ? out.time(t.refresh_expires_at, now) : "(none)"],
    ["effective_scopes", t.effective_scopes.join(",")],
  ]);
}

const args = {
  ...commonArgs,
  code: { type: "string", description: "Authorization code from the redirect" },
  refresh: { type: "boolean", default: false, description: "Refresh the saved token (of --provider) with its refresh token" },
  session: { type: "string", description: "ath_session_id (default: the pending one)", valueHint: "ath_sess_…" },
  provider: { type: "string", description: "Pick the pending session of this provider" },
  ...showSecretsArg,
} as const;

export default defineCommand({
  meta: { name: "token", description: "Exchange the code plus session id for a token" },
  args,
  run: ({ args: a, data }) => {
    const o: TokenOptions = { ...commonOptions(data), code: String(a.code ?? ""), showSecrets: a["show-secrets"] === true, refresh: a.refresh === true };
    const session = text(a.session);
    if (session !== undefined) o.session = session;
    const provider = single(data, "provider", "token");
    if (provider !== undefined) o.provider = provider;
    return run(o, getDeps());
  },
});
