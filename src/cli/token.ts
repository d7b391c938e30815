/**
 * `ath token --code X [--session S]`: exchange the agent code for a token (Phase B, RFC 6749 §4.1.3) and save it.
 * Without `--session` the most recent unexpired pending session from `ath authorize` is used.
 */
import { defineCommand } from "citty";
import { notConfigured, usageError } from "../agent/errors.ts";
import type { SavedToken } from "../agent/home.ts";
import { exchangeAndSave, livePending, requireRegistration } from "../agent/tokens.ts";
import type { TokenResponse } from "../protocol/schemas.ts";
import { commonArgs, commonOptions, context, showSecretsArg, type CommonOptions } from "./common.ts";
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
  let sessionId = opts.session;
  if (sessionId === undefined) {
    sessionId = livePending(registration, deps.now(), opts.provider)[0]?.[0];
    if (sessionId === undefined) {
      const which = opts.provider === undefined ? "" : ` for ${opts.provider}`;
      throw notConfigured(
        "NO_PENDING_SESSION",
        `no unexpired pending authorization${which} at ${base} (sessions last 10 minutes): pass --session <ath_sess_…>, ` +
          `or run \`ath authorize -g ${base} --provider ${opts.provider ?? "<id>"}\` again`,
      );
    }
  }
  const { response, saved } = await exchangeAndSave({ home: ctx.home, http: ctx.http, base, identity, registration, code: opts.code, sessionId, now: deps.now });
  renderToken(ctx.out, response, saved, opts.showSecrets, deps.now());
}

/** The token summary shared by `token` and `authorize --wait`: the token itself masked unless asked. */
export function renderToken(out: Output, res: TokenResponse, saved: SavedToken, show: boolean, now: number): void {
  if (out.json) {
    return out.doc({ ...res, access_token: reveal(res.access_token, show), expires_at: saved.expires_at });
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

export default defineCommand({
  meta: { name: "token", description: "Exchange the code plus session id for a token" },
  args: {
    ...commonArgs,
    code: { type: "string", description: "Authorization code from the redirect", required: true },
    session: { type: "string", description: "ath_session_id (default: the pending one)", valueHint: "ath_sess_…" },
    provider: { type: "string", description: "Pick the pending session of this provider" },
    ...showSecretsArg,
  },
  run: ({ args }) => {
    const o: TokenOptions = { ...commonOptions(args), code: String(args.code ?? ""), showSecrets: args["show-secrets"] === true };
    if (typeof args.session === "string" && args.session !== "") o.session = args.session;
    if (typeof args.provider === "string" && args.provider !== "") o.provider = args.provider;
    return run(o, getDeps());
  },
});
