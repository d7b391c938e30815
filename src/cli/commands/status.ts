/**
 * `ath status`: configuration, agent identity, registrations, approvals, tokens with time left and pending
 * sessions — read from the home directory only, no network, unless `--refresh` asks each gateway for the live status
 * of its registrations (and saves it), and refreshes this identity's tokens that expire within a minute. Secrets are masked (also in json) unless `--show-secrets`.
 */
import { refreshedStatus, status, type RefreshOutcome, type Status } from "../../agent/flows/status.ts";
import { commonOptions, context, type CommonOptions, type Context } from "../kit/common.ts";
import { getDeps, type Deps } from "../kit/deps.ts";
import { oneLine } from "../kit/errors.ts";
import { commonArgs, defineCommand, showSecretsArg } from "../kit/flags.ts";
import { relative } from "../kit/render.ts";

export interface StatusOptions extends CommonOptions {
  showSecrets: boolean;
  /** Ask each gateway for the registration as it is now (GET /ath/agents/status) and save what it says. */
  refresh: boolean;
}

export async function run(opts: StatusOptions, deps: Deps): Promise<void> {
  const ctx = await context(opts, deps);
  const input = { target: opts, showSecrets: opts.showSecrets };
  const doc = opts.refresh
    ? await refreshedStatus(input, ctx.agent, { onTokenNotRefreshed: (provider, gateway, message) => ctx.out.info(`token for ${provider} at ${gateway} not refreshed: ${message}`) })
    : await status(input, ctx.agent);
  if (ctx.out.json) return ctx.out.doc(doc);
  render(ctx, doc, deps.now());
}

// internal

function render(ctx: Context, doc: Status & { registrations: Partial<RefreshOutcome>[] }, now: number): void {
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
      ["agent_status", r.agent_status + ("refresh_error" in r && r.refresh_error ? ` (saved; refresh failed: ${r.refresh_error.message})` : r.refreshed ? " (live)" : "")],
      ["approval_expires", out.time(r.approval_expires, now)],
      ...r.approved_providers.map((p) => ["approved", `${p.provider_id}\t${p.approved_scopes.join(",")}`]),
      ...r.tokens.map((t) => [
        "token",
        `${t.provider_id}\t${t.access_token}\t${t.effective_scopes.join(",")}\t${t.expires_at}\t${t.expired ? "expired" : relative(t.seconds_left * 1000)}${t.refresh_expires_at ? `\trefresh until ${t.refresh_expires_at}` : ""}`,
      ]),
      ...r.pending.map((p) => ["pending", `${p.provider_id}\t${p.ath_session_id}\t${p.created_at}`]),
    ]);
  }
  if (doc.registrations.length === 0) out.info("no registrations yet: run `ath register -g <gateway> --provider <id>`");
}

export default defineCommand({
  meta: { name: "status", description: "Show saved credentials and tokens" },
  args: { ...commonArgs, ...showSecretsArg, refresh: { type: "boolean", default: false, description: "Ask the gateways for each registration's live status and save it" } },
  run: ({ args, data }) => run({ ...commonOptions(data), showSecrets: args["show-secrets"] === true, refresh: args.refresh === true }, getDeps()),
});
