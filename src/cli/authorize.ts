/**
 * `ath authorize` (Phase B): start the user consent. Without `--wait` it prints `authorization_url` and
 * `ath_session_id` and saves the pending session for `ath token`. With `--wait` (the default on an interactive
 * terminal in text mode) it receives the redirect on a loopback port, exchanges the code and saves the token in
 * one step.
 */
import { defineCommand } from "citty";
import { audience, discoverService, startAuthorization } from "../agent/client.ts";
import { usageError } from "../agent/errors.ts";
import { updateCredentials } from "../agent/home.ts";
import { attest } from "../agent/identity.ts";
import { startLoopback } from "../agent/loopback.ts";
import { exchangeAndSave, forgetPending, requireRegistration } from "../agent/tokens.ts";
import { collect, commonArgs, commonOptions, context, showSecretsArg, single, splitList, type CommonOptions } from "./common.ts";
import { getDeps, type Deps } from "./deps.ts";
import { renderToken } from "./token.ts";
import { spinner } from "./spinner.ts";

/** The longest `--timeout`: the gateway keeps an authorization session for at most 600 s (LIMITS.sessionTtlMaxSeconds). */
export const MAX_WAIT_SECONDS = 600;

export interface AuthorizeOptions extends CommonOptions {
  provider?: string;
  scopes: string[];
  wait: boolean;
  open: boolean;
  timeoutSeconds: number;
  redirectUri?: string;
  resource?: string;
  showSecrets: boolean;
}

export async function run(opts: AuthorizeOptions, deps: Deps): Promise<void> {
  if (opts.wait && opts.redirectUri !== undefined) throw usageError("--redirect-uri cannot be combined with --wait (it listens on its own loopback URI)");
  const ctx = await context(opts, deps);
  const { out } = ctx;
  const base = ctx.base();
  const identity = await ctx.identity();
  const registration = await requireRegistration(ctx.home, base, identity.agentId);
  const provider = opts.provider ?? (opts.mode === "native" ? (await discoverService(base, ctx.http)).app_id : undefined);
  if (provider === undefined) throw usageError("authorize needs --provider <id>");
  const scopes = opts.scopes.length > 0 ? opts.scopes : registration.approved_providers.find((p) => p.provider_id === provider)?.approved_scopes ?? [];
  if (scopes.length === 0) throw usageError(`no scopes for ${provider}: pass --scopes (none were approved for it at registration)`);
  const state = Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("base64url");
  const retry = `ath authorize -g ${base} --provider ${provider}`;
  const receiver = opts.wait ? startLoopback(state, { timeoutMs: opts.timeoutSeconds * 1000, retry }) : undefined;
  try {
    const redirectUri = receiver?.redirectUri ?? opts.redirectUri;
    const res = await startAuthorization(
      base,
      {
        client_id: registration.client_id,
        agent_attestation: await attest(identity, audience(base, "authorize")),
        provider_id: provider,
        scopes,
        state,
        ...(redirectUri === undefined ? {} : { user_redirect_uri: redirectUri }),
        ...(opts.resource === undefined ? {} : { resource: opts.resource }),
      },
      ctx.http,
    );
    await updateCredentials(
      ctx.home,
      (c) => {
        const reg = c.gateways[base]?.agents[identity.agentId];
        if (reg === undefined) return;
        reg.pending[res.ath_session_id] = {
          provider_id: provider,
          scopes,
          state,
          authorization_url: res.authorization_url,
          created_at: new Date(deps.now()).toISOString(),
          ...(redirectUri === undefined ? {} : { user_redirect_uri: redirectUri }),
        };
      },
      deps.now,
    );
    if (receiver === undefined) {
      if (out.json) return out.doc(res);
      out.table([
        ["authorization_url", res.authorization_url],
        ["ath_session_id", res.ath_session_id],
      ]);
      out.info(`open the URL, approve, then run: ath token -g ${base} --code <code>`);
      return;
    }
    const say = out.json ? out.info : out.line;
    say(`Open this URL to approve ${provider} (${scopes.join(", ")}):\n  ${res.authorization_url}`);
    out.info(`waiting for the redirect on ${receiver.redirectUri}`);
    if (out.json) {
      // stdout keeps its one document (the token); a harness that must show the URL can parse this stderr line.
      deps.stderr(`${JSON.stringify({ authorization_url: res.authorization_url, ath_session_id: res.ath_session_id, redirect_uri: receiver.redirectUri })}\n`);
    }
    if (opts.open) {
      // Not awaited: an opener that never exits must not stop the wait.
      deps.openUrl(res.authorization_url).catch((e: unknown) => out.info(`could not open a browser (${(e as Error).message}): open the URL yourself`));
    }
    const spin = deps.stderrTTY && !out.json ? spinner("waiting for approval in the browser…", deps.stderr) : undefined;
    // Ctrl-C ends the wait like a timeout: nothing else could exchange this session's code.
    const offInterrupt = deps.onInterrupt(async () => {
      spin?.stop();
      await forgetPending(ctx.home, base, identity.agentId, res.ath_session_id, deps.now);
    });
    let exchanged;
    try {
      let callback;
      try {
        callback = await receiver.result;
      } finally {
        spin?.stop();
      }
      exchanged = await exchangeAndSave({
        home: ctx.home,
        http: ctx.http,
        base,
        identity,
        registration,
        code: callback.code,
        sessionId: callback.sessionId ?? res.ath_session_id,
        now: deps.now,
      });
    } catch (e) {
      // Only this process's loopback receiver could get the code: a failed or timed-out wait leaves nothing that
      // `ath token` could exchange, so the pending entry goes (a failure to forget it must not hide the cause).
      await forgetPending(ctx.home, base, identity.agentId, res.ath_session_id, deps.now).catch(() => undefined);
      throw e;
    } finally {
      offInterrupt();
    }
    renderToken(out, exchanged.response, exchanged.saved, opts.showSecrets, deps.now());
  } finally {
    receiver?.stop();
  }
}

export default defineCommand({
  meta: { name: "authorize", description: "Obtain the authorization URL (Phase B); --wait completes it in one step" },
  args: {
    ...commonArgs,
    provider: { type: "string", description: "Provider id (native mode: the app id)", valueHint: "id" },
    scopes: { type: "string", description: "Comma-separated scopes (default: those approved at registration)", valueHint: "a,b" },
    wait: { type: "boolean", description: "Receive the redirect on a loopback port and save the token (default on a TTY, text mode)" },
    open: { type: "boolean", default: true, description: "Open the browser", negativeDescription: "Only print the URL" },
    timeout: { type: "string", default: "300", description: `Seconds to wait for the approval (at most ${MAX_WAIT_SECONDS})`, valueHint: "seconds" },
    "redirect-uri": { type: "string", description: "user_redirect_uri to send (without --wait)", valueHint: "uri" },
    resource: { type: "string", description: "RFC 8707 resource indicator", valueHint: "uri" },
    ...showSecretsArg,
  },
  run: ({ args, rawArgs }) => {
    const deps = getDeps();
    const timeout = Number(args.timeout);
    if (!Number.isInteger(timeout) || timeout <= 0 || timeout > MAX_WAIT_SECONDS) {
      throw usageError(`--timeout must be a whole number of seconds from 1 to ${MAX_WAIT_SECONDS} (the gateway's session lifetime), got "${args.timeout}"`);
    }
    const common = commonOptions(args);
    const provider = single(rawArgs, "provider", "authorize");
    const o: AuthorizeOptions = {
      ...common,
      scopes: splitList(collect(rawArgs, ["scopes"])),
      // An agent (json) with a pty must not get a browser and a 300 s block by default: it hands the URL on.
      wait: typeof args.wait === "boolean" ? args.wait : deps.stdinTTY && deps.stdoutTTY && common.format !== "json",
      open: args.open !== false,
      timeoutSeconds: timeout,
      showSecrets: args["show-secrets"] === true,
    };
    if (provider !== undefined) o.provider = provider;
    for (const [k, v] of [["redirectUri", args["redirect-uri"]], ["resource", args.resource]] as const) {
      if (typeof v === "string" && v !== "") o[k] = v;
    }
    return run(o, deps);
  },
});
