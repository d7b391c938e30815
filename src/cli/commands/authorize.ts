/**
 * `ath authorize` (Phase B): start the user consent. Without `--wait` it prints `authorization_url` and
 * `ath_session_id` and saves the pending session for `ath token`. With `--wait` (the default on an interactive
 * terminal in text mode) it receives the redirect on a loopback port, exchanges the code and saves the token in
 * one step.
 */
import { abandon, authorize, authorizeAndWait, type Authorization, type AuthorizeInput } from "../../agent/flows/authorize.ts";
import { opensElsewhere } from "../../agent/links.ts";
import { commonOptions, context, list, single, text, type CommonOptions, type Context } from "../kit/common.ts";
import { getDeps, type Deps } from "../kit/deps.ts";
import { usageError } from "../kit/errors.ts";
import { commonArgs, defineCommand, showSecretsArg } from "../kit/flags.ts";
import { spinner } from "../kit/spinner.ts";
import { renderToken } from "./token.ts";

export interface AuthorizeOptions extends CommonOptions, Omit<AuthorizeInput, "target"> {
  wait: boolean;
  open: boolean;
  timeoutSeconds: number;
  showSecrets: boolean;
}

export async function run(opts: AuthorizeOptions, deps: Deps): Promise<void> {
  if (opts.wait && opts.redirectUri !== undefined) throw usageError("--redirect-uri cannot be combined with --wait (it listens on its own loopback URI)");
  const ctx = await context(opts, deps);
  const { out } = ctx;
  const input = { target: ctx.target(), provider: opts.provider, scopes: opts.scopes, resource: opts.resource };
  if (!opts.wait) {
    const a = await authorize({ ...input, redirectUri: opts.redirectUri }, ctx.agent);
    if (out.json) return out.doc({ authorization_url: a.authorization_url, ath_session_id: a.ath_session_id });
    // DESIGN §14: a link that leaves the gateway is named first
    const elsewhere = opensElsewhere(a.authorization_url, a.gateway);
    out.table([
      ...(elsewhere ? [["note", `the URL ${elsewhere}, not the gateway`]] : []),
      ["authorization_url", a.authorization_url],
      ["ath_session_id", a.ath_session_id],
    ]);
    out.info(`open the URL, approve, then run: ath token -g ${a.gateway} --code <code>`);
    return;
  }
  let waiting: { stop(): void } | undefined;
  try {
    const r = await authorizeAndWait({ ...input, timeoutMs: opts.timeoutSeconds * 1000, onStarted: (a) => (waiting = started(ctx, opts, a)) }, ctx.agent);
    waiting?.stop();
    renderToken(out, r, opts.showSecrets, deps.now());
  } finally {
    waiting?.stop();
  }
}

// internal

/** The URL is shown, the browser opened and Ctrl-C armed; `stop` ends the spinner and disarms Ctrl-C. */
function started(ctx: Context, opts: AuthorizeOptions, a: Authorization & { user_redirect_uri: string }): { stop(): void } {
  const { out, deps } = ctx;
  const until = deps.now() + opts.timeoutSeconds * 1000;
  let spin: { stop(): void } | undefined;
  // Ctrl-C ends the wait like a timeout: nothing else could exchange this session's code. Armed before the URL is
  // shown: a person (or a harness) may interrupt as soon as they see it.
  const offInterrupt = deps.onInterrupt(async (signal) => {
    spin?.stop();
    // --format json promises one document on stdout, also when the wait is interrupted
    if (out.json) deps.stdout(`${JSON.stringify({ error: { code: "CANCELLED", message: `${signal} while waiting for approval; the session was abandoned` } })}\n`);
    await abandon(a, ctx.agent);
  });
  const say = out.json ? out.info : out.line;
  const elsewhere = opensElsewhere(a.authorization_url, a.gateway);
  say(`Open this URL to approve ${a.provider_id} (${a.scopes.join(", ")})${elsewhere ? ` — it ${elsewhere}, not the gateway` : ""}:\n  ${a.authorization_url}`);
  out.info(`waiting for the redirect on ${a.user_redirect_uri}`);
  if (out.json) {
    // stdout keeps its one document (the token); a harness that must show the URL can parse this stderr line.
    deps.stderr(`${JSON.stringify({ authorization_url: a.authorization_url, ath_session_id: a.ath_session_id, redirect_uri: a.user_redirect_uri })}\n`);
  }
  spin = deps.stderrTTY && !out.json ? spinner(() => `waiting for approval in the browser… ${timeLeft(until - deps.now())} left`, deps.stderr) : undefined;
  if (opts.open) {
    // Not awaited: an opener that never exits must not stop the wait. One that fails is said loudly, with the URL
    // again: the person must open it themselves (no display over SSH, no browser installed, a broken $BROWSER).
    deps.openUrl(a.authorization_url).catch((e: unknown) => {
      if (spin) deps.stderr("\r\u001b[2K");
      out.info(`could not open a browser (${(e as Error).message}). Open this URL yourself, within ${timeLeft(until - deps.now())}:\n\n  ${a.authorization_url}\n`);
    });
  }
  let stopped = false;
  return {
    stop() {
      if (stopped) return;
      stopped = true;
      spin?.stop();
      offInterrupt();
    },
  };
}

/** `4:05` — minutes and seconds. */
function timeLeft(ms: number): string {
  const s = Math.max(0, Math.ceil(ms / 1000));
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, "0")}`;
}

/** The longest `--timeout`: the gateway keeps an authorization session for at most 600 s (LIMITS.sessionTtlMaxSeconds). */
const MAX_WAIT_SECONDS = 600;

const args = {
  ...commonArgs,
  provider: { type: "string", description: "Provider id (native mode: the app id)", valueHint: "id" },
  scopes: { type: "string", description: "Comma-separated scopes (default: those approved at registration)", valueHint: "a,b" },
  wait: {
    type: "boolean",
    description: "Receive the redirect on a loopback port and save the token (default on a TTY, text mode)",
    negativeDescription: "Print the URL and the session, then return: `ath token --code` saves the token (default when piped or --format json)",
  },
  open: { type: "boolean", default: true, description: "Open the browser", negativeDescription: "Only print the URL" },
  timeout: { type: "string", default: "300", description: `Seconds to wait for the approval (at most ${MAX_WAIT_SECONDS})`, valueHint: "seconds" },
  "redirect-uri": { type: "string", description: "user_redirect_uri to send (without --wait)", valueHint: "uri" },
  resource: { type: "string", description: "RFC 8707 resource indicator", valueHint: "uri" },
  ...showSecretsArg,
} as const;

export default defineCommand({
  meta: { name: "authorize", description: "Obtain the authorization URL (Phase B); --wait completes it in one step" },
  args,
  run: ({ args: a, data }) => {
    const deps = getDeps();
    const timeout = Number(a.timeout);
    if (!Number.isInteger(timeout) || timeout <= 0 || timeout > MAX_WAIT_SECONDS) {
      throw usageError(`--timeout must be a whole number of seconds from 1 to ${MAX_WAIT_SECONDS} (the gateway's session lifetime), got "${a.timeout}"`);
    }
    const common = commonOptions(data);
    const provider = single(data, "provider", "authorize");
    const o: AuthorizeOptions = {
      ...common,
      scopes: list(data, "scopes"),
      // An agent (json) with a pty must not get a browser and a 300 s block by default: it hands the URL on.
      wait: typeof a.wait === "boolean" ? a.wait : deps.stdinTTY && deps.stdoutTTY && common.format !== "json",
      open: a.open !== false,
      timeoutSeconds: timeout,
      showSecrets: a["show-secrets"] === true,
    };
    if (provider !== undefined) o.provider = provider;
    const [redirectUri, resource] = [text(a["redirect-uri"]), text(a.resource)];
    if (redirectUri !== undefined) o.redirectUri = redirectUri;
    if (resource !== undefined) o.resource = resource;
    return run(o, deps);
  },
});
