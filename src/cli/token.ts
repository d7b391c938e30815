/**
 * `ath token --code X [--session S]`: exchange the agent code for a token (Phase B, RFC 6749 §4.1.3) and save it.
 * Without `--session` the only unexpired pending session from `ath authorize` is used (several: exit 3). A code
 * this home already exchanged is not sent again: the token it gave is printed, with `already_exchanged`.
 */
import { defineCommand } from "citty";
import { notConfigured, usageError } from "../agent/errors.ts";
import type { Registration, SavedToken } from "../agent/home.ts";
import { codeKey, exchangeAndSave, pickPending, requireRegistration } from "../agent/tokens.ts";
import type { TokenResponse } from "../protocol/schemas.ts";
import { commonArgs, commonOptions, context, showSecretsArg, single, type CommonOptions } from "./common.ts";
import { getDeps, type Deps } from "./deps.ts";
import { reveal, type Output } from "./render.ts";

export interface TokenOptions extends CommonOptions {
  code: string;
  session?: string;
  provider?: string;
  showSecrets: boolean;
}

export async function run(opts: TokenOptions, deps: Deps): Promise<void> {
  if (opts.code === "") throw usageError("token needs --code <code> (from the redirect after the user approved)");
  const ctx = await context(opts, deps);
  const base = ctx.base();
  const identity = await ctx.identity();
  const registration = await requireRegistration(ctx.home, base, identity.agentId);
  // A code is single-use: a re-run (the agent lost the first answer) must not send it against another session.
  const previous = alreadyExchanged(registration, opts.code, base);
  if (previous !== undefined) {
    if (!ctx.out.json) ctx.out.info(`this code was already exchanged at ${previous.obtained_at}; its token for ${previous.provider_id} is saved`);
    return renderToken(ctx.out, responseOf(previous, deps.now()), previous, opts.showSecrets, deps.now(), true);
  }
  const sessionId = opts.session ?? pickPending(registration, base, deps.now(), opts.provider);
  const { response, saved } = await exchangeAndSave({ home: ctx.home, http: ctx.http, base, identity, registration, code: opts.code, sessionId, now: deps.now });
  renderToken(ctx.out, response, saved, opts.showSecrets, deps.now());
}

/** The token summary shared by `token` and `authorize --wait`: the token itself masked unless asked. */
export function renderToken(out: Output, res: TokenResponse, saved: SavedToken, show: boolean, now: number, again = false): void {
  if (out.json) {
    return out.doc({ ...res, access_token: reveal(res.access_token, show), expires_at: saved.expires_at, ...(again ? { already_exchanged: true } : {}) });
  }
  const si = res.scope_intersection;
  out.success(`token for ${res.provider_id} saved`);
  out.table([
    ["provider", res.provider_id],
    ["access_token", reveal(res.access_token, show)],
    ["expires_at", out.time(saved.expires_at, now)],
    ["effective_scopes", res.effective_scopes.join(",")],
    ["agent_approved", si.agent_approved.join(",")],
    ["user_consented", si.user_consented.join(",")],
  ]);
}

// internal

/**
 * The saved token a previous exchange of `code` gave, or undefined when this home never exchanged it. Exchanged,
 * but its token is gone (revoked, or replaced by a later authorization): exit 3, since the code cannot be reused.
 */
function alreadyExchanged(reg: Registration, code: string, base: string): SavedToken | undefined {
  const done = reg.exchanged[codeKey(code)];
  if (done === undefined) return undefined;
  const token = reg.tokens[done.provider_id];
  if (token !== undefined && token.obtained_at === done.exchanged_at) return token;
  throw notConfigured(
    "CODE_ALREADY_EXCHANGED",
    `this code was already exchanged at ${done.exchanged_at} and its token for ${done.provider_id} is no longer saved (revoked or replaced): ` +
      `run \`ath authorize -g ${base} --provider ${done.provider_id}\` for a new one`,
    { gateway: base, provider_id: done.provider_id, ath_session_id: done.ath_session_id },
  );
}

/** The token response a saved token stands for (`expires_in` counted from now). */
function responseOf(t: SavedToken, now: number): TokenResponse {
  const effective = t.effective_scopes;
  return {
    access_token: t.access_token,
    token_type: "Bearer",
    expires_in: Math.max(0, Math.floor((Date.parse(t.expires_at) - now) / 1000)),
    effective_scopes: effective,
    provider_id: t.provider_id,
    agent_id: t.agent_id,
    scope_intersection: t.scope_intersection ?? { agent_approved: effective, user_consented: effective, effective },
  };
}

export default defineCommand({
  meta: { name: "token", description: "Exchange the code plus session id for a token" },
  args: {
    ...commonArgs,
    code: { type: "string", description: "Authorization code from the redirect", required: true },
    session: { type: "string", description: "ath_session_id (default: the pending one)", valueHint: "ath_sess_…" },
    provider: { type: "string", description: "Pick the pending session of this provider" },
    ...showSecretsArg,
  },
  run: ({ args, rawArgs }) => {
    const o: TokenOptions = { ...commonOptions(args), code: String(args.code ?? ""), showSecrets: args["show-secrets"] === true };
    if (typeof args.session === "string" && args.session !== "") o.session = args.session;
    const provider = single(rawArgs, "provider", "token");
    if (provider !== undefined) o.provider = provider;
    return run(o, getDeps());
  },
});
