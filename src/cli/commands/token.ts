/**
 * `ath token --code X [--session S]`: exchange the agent code for a token (Phase B, RFC 6749 §4.1.3) and save it.
 * Without `--session` the only unexpired pending session from `ath authorize` is used (several: exit 3). A code
 * this home already exchanged is not sent again: the token it gave is printed, with `already_exchanged`.
 * DESIGN §23 (commands/token-grants.ts): `--actor`, `--delegate <client_id>`, `--import <file>`, `--assertion <jwt>`.
 */
import { exchange, type ExchangeInput, type Exchanged } from "../../agent/flows/exchange.ts";
import { reveal } from "../../agent/mask.ts";
import { commonOptions, context, list, single, text, type CommonOptions } from "../kit/common.ts";
import { getDeps, type Deps } from "../kit/deps.ts";
import { usageError } from "../kit/errors.ts";
import { commonArgs, defineCommand, showSecretsArg } from "../kit/flags.ts";
import type { Output } from "../kit/render.ts";
import type { SavedToken } from "../../agent/home.ts";

/** What `--actor`, `--delegate`, `--import` and `--assertion` ask for (DESIGN §23); at most one of them. */
export type GrantMode =
  | { kind: "actor" }
  | { kind: "delegate"; clientId: string; actorToken: string | undefined; scopes: string[] | undefined; budget: string | undefined; out: string | undefined }
  | { kind: "import"; file: string }
  | { kind: "assertion"; assertion: string; scopes: string[] | undefined };

function grantMode(a: Record<string, unknown>, scopes: string[]): GrantMode | undefined {
  const modes = [a.actor === true, text(a.delegate) !== undefined, text(a.import) !== undefined, text(a.assertion) !== undefined].filter(Boolean).length;
  if (modes > 1) throw usageError("token takes one of --actor, --delegate, --import and --assertion");
  const assertion = text(a.assertion);
  if (assertion !== undefined) {
    for (const flag of ["actor-token", "budget", "out"]) if (text(a[flag]) !== undefined) throw usageError(`--${flag} goes with --delegate`);
    return { kind: "assertion", assertion, scopes: scopes.length ? scopes : undefined };
  }
  if (a.actor === true) return { kind: "actor" };
  const clientId = text(a.delegate);
  if (clientId !== undefined) {
    return { kind: "delegate", clientId, actorToken: text(a["actor-token"]), scopes: scopes.length ? scopes : undefined, budget: text(a.budget), out: text(a.out) };
  }
  const file = text(a.import);
  if (file !== undefined) return { kind: "import", file };
  for (const flag of ["actor-token", "budget", "out"]) if (text(a[flag]) !== undefined) throw usageError(`--${flag} goes with --delegate`);
  if (scopes.length) throw usageError("--scopes goes with --delegate or --assertion");
  return undefined;
}

export interface TokenOptions extends CommonOptions, Omit<ExchangeInput, "target"> {
  showSecrets: boolean;
  /** `--refresh`: refresh the saved token with its refresh token instead of exchanging a code (DESIGN §17). */
  refresh?: boolean;
  /** `--actor`, `--delegate`, `--import`, `--assertion` (DESIGN §23). */
  grant?: GrantMode;
}

export async function run(opts: TokenOptions, deps: Deps): Promise<void> {
  if (opts.grant) {
    if (opts.code !== "" || opts.refresh) throw usageError("token takes one of --code, --refresh, --actor, --delegate, --import and --assertion");
    const { runGrant } = await import("./token-grants.ts");
    return runGrant(opts, opts.grant, deps);
  }
  if (opts.refresh) {
    if (opts.code !== "") throw usageError("token takes --code or --refresh, not both");
    const ctx = await context(opts, deps);
    const { refreshSaved } = await import("../../agent/flows/refresh.ts");
    // asked for when this process started: a refresh another process made since then is the one asked for
    const r = await refreshSaved(ctx.agent, ctx.target().base, opts.provider, Math.floor(performance.timeOrigin));
    return renderRefreshed(ctx.out, r.token, r.refreshed, opts.showSecrets, deps.now());
  }
  if (opts.code === "") throw usageError("token needs --code <code> (from the redirect after the user approved), or --refresh (or --actor, --delegate, --import)");
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
  provider: { type: "string", description: "Pick the pending session of this provider (with --delegate: the token to delegate)" },
  ...showSecretsArg,
  // delegation to a sub-agent (DESIGN §23)
  actor: { type: "boolean", default: false, description: "As a sub-agent: print an actor token (5 min, single use) for the agent that delegates to you" },
  delegate: { type: "string", description: "Delegate part of the saved token to this sub-agent's client_id (needs --actor-token)", valueHint: "client_id" },
  "actor-token": { type: "string", description: "The sub-agent's actor token (what `ath token --actor` printed; - for stdin)", valueHint: "jwt" },
  scopes: { type: "string", description: "With --delegate: the scopes to pass on (default: all of the token's); with --assertion: narrower scopes", valueHint: "a,b" },
  budget: { type: "string", description: "With --delegate: the calls the sub-agent may make (carved out of yours)", valueHint: "n" },
  out: { type: "string", description: "With --delegate: write the handoff for the sub-agent to this file (0600)", valueHint: "file" },
  import: { type: "string", description: "As a sub-agent: save the token a parent delegated to you (its handoff file; - for stdin)", valueHint: "file" },
  assertion: { type: "string", description: "Trade an enterprise IdP's ID-JAG for the person's token of --provider (- for stdin)", valueHint: "jwt" },
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
    const grant = grantMode(a, list(data, "scopes"));
    if (grant) o.grant = grant;
    return run(o, getDeps());
  },
});
