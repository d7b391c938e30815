/**
 * `ath_authorize` and `ath_token`: the person's consent, as `ath authorize --wait` gets it. The agent registers
 * first when it is not yet registered at the gateway; the consent page's redirect comes back to a loopback
 * receiver that keeps running after the tool has answered (mcp/waits.ts), so the host can show the URL and then
 * call `ath_token` to collect the outcome. A host that declared URL-mode elicitation is asked to send the person
 * to the page itself, and the tool waits for the approval. With `code_on_page` the gateway shows the person a
 * code instead (their browser cannot reach this machine), which `ath_token {code}` exchanges.
 */
import { forTerminal } from "../../text/sanitize.ts";
import type { CallToolResult } from "@modelcontextprotocol/server";
import { ClientError, notConfigured } from "../../agent/errors.ts";
import type { Agent, Target } from "../../agent/flows/agent.ts";
import { authorize, authorizeAndWait, type Authorization } from "../../agent/flows/authorize.ts";
import { opensElsewhere } from "../../agent/links.ts";
import { exchange, type Exchanged } from "../../agent/flows/exchange.ts";
import { liveToken, registerIfNeeded as registerFirst } from "../../agent/flows/held.ts";
import type { SavedToken } from "../../agent/home.ts";
import { MAX_WAIT_SECONDS, type AuthorizationOutput, type AuthorizeToolInput, type TokenToolInput } from "../../protocol/mcp-tools.ts";
import { ok } from "../results.ts";
import { forCall, type Call, type ToolContext } from "./context.ts";
import { settleWithin, type Wait } from "../waits.ts";

/**
 * How long `ath_authorize` waits for the approval after a URL elicitation, and `ath_token` for it, by default: under
 * the 60 s a host built on the SDK gives a call unless progress resets it; the host can ask for more (and gets
 * notifications/progress every 5 s when it sent a progressToken). A wait that ends first answers `pending`.
 */
const DEFAULT_WAIT_SECONDS = { elicited: 45, token: 45 } as const;

export async function authorizeTool(ctx: ToolContext, args: AuthorizeToolInput, call: Call): Promise<CallToolResult> {
  const { signal } = call;
  const agent = forCall(ctx.agent, signal);
  const target = agent.target(ctx.target);
  const registeredNow = await registerIfNeeded(target, args, agent);
  // Asking the person again for what a live token already allows would only bother them (ath_revoke first to redo it).
  const held = registeredNow ? undefined : await liveToken(target, args.provider, agent);
  if (held !== undefined && (args.scopes ?? []).every((s) => held.effective_scopes.includes(s))) return authorizedBy(held, target.base);
  const input = { target, provider: args.provider, scopes: args.scopes ?? [] };
  if (args.code_on_page === true) {
    ctx.waits.cancel(args.provider);
    return pending(await authorize(input, agent), registeredNow, "code");
  }
  // The wait outlives this call: it acts with the server's agent, not with this call's signal.
  const wait = ctx.waits.start(args.provider, (stop, onStarted) =>
    authorizeAndWait({ ...input, timeoutMs: MAX_WAIT_SECONDS * 1000, onStarted, signal: stop }, ctx.agent),
  );
  let started: Authorization;
  try {
    started = await wait.started;
  } catch (e) {
    ctx.waits.forget(wait);
    throw e;
  }
  if (ctx.server.server.getClientCapabilities()?.elicitation?.url === undefined) return pending(started, registeredNow, "loopback");
  const elicitationId = started.ath_session_id;
  let action: string;
  try {
    const answer = await ctx.server.server.elicitInput(
      {
        mode: "url",
        elicitationId,
        url: started.authorization_url,
        message: forTerminal(`${named(started)}Approve access to ${started.provider_id} (${started.scopes.join(", ")}) for this agent at the ATH gateway ${started.gateway}.`, { multiline: false }),
      },
      { signal },
    );
    action = answer.action;
  } catch {
    // The host could not run the elicitation after all: it gets the URL to show, as a host without elicitation does.
    return pending(started, registeredNow, "loopback");
  }
  if (action !== "accept") {
    ctx.waits.cancel(args.provider);
    throw new ClientError("failure", "CANCELLED", `the person ${action === "decline" ? "declined" : "dismissed"} the request to open the consent page: nothing was authorized`);
  }
  // Tells the host the out-of-band step is over once the code has arrived (the person's tab shows it too).
  const notify = ctx.server.server.createElicitationCompletionNotifier(elicitationId);
  wait.done.then(() => notify().catch(() => undefined), () => undefined);
  const waited = await settleWithin(wait, (args.wait_seconds ?? DEFAULT_WAIT_SECONDS.elicited) * 1000, signal, call.progress);
  if (waited !== "done") return pending(started, registeredNow, "loopback");
  return outcome(ctx, wait, registeredNow);
}

export async function tokenTool(ctx: ToolContext, args: TokenToolInput, call: Call): Promise<CallToolResult> {
  const { signal } = call;
  const agent = forCall(ctx.agent, signal);
  const target = agent.target(ctx.target);
  if (args.code !== undefined) {
    const r = await exchange(
      { target, code: args.code, ...(args.session === undefined ? {} : { session: args.session }), ...(args.provider === undefined ? {} : { provider: args.provider }) },
      agent,
    );
    // A newer token is saved: a loopback wait for the same provider has nothing left to do.
    const w = ctx.waits.find(r.response.provider_id);
    if (w !== undefined && w.settled === undefined) ctx.waits.cancel(w.provider);
    return authorized(r, target.base);
  }
  const wait = ctx.waits.find(args.provider);
  if (wait === undefined) return saved(target, args.provider, agent);
  const waited = await settleWithin(wait, (args.wait_seconds ?? DEFAULT_WAIT_SECONDS.token) * 1000, signal, call.progress);
  if (waited !== "done") return pending(await wait.started, false, "loopback");
  return outcome(ctx, wait, false);
}

// internal

/** Registers the agent for the provider when this home holds no registration at the gateway; true if it did. */
/** Registers first when this identity is not registered at the target (ath_authorize is the agent's first call). */
function registerIfNeeded(target: Target, args: AuthorizeToolInput, agent: Agent): Promise<boolean> {
  return registerFirst(target, args.provider, args.scopes ?? [], "agent tools of an MCP host (ath mcp)", agent);
}

/** The settled wait's outcome: the token, or its error (the wait is forgotten either way: it has been reported). */
function outcome(ctx: ToolContext, wait: Wait, registeredNow: boolean): CallToolResult {
  const s = wait.settled;
  ctx.waits.forget(wait);
  if (s === undefined) throw new TypeError("outcome of an unsettled wait");
  if ("error" in s) throw s.error;
  const r = authorized(s.ok, wait.info?.gateway ?? "");
  if (registeredNow) (r.structuredContent as AuthorizationOutput).registered_now = true;
  return r;
}

function authorized(r: Exchanged, gateway: string): CallToolResult {
  const result = authorizedBy(r.saved, gateway);
  if (r.already_exchanged) (result.structuredContent as AuthorizationOutput).already_exchanged = true;
  return result;
}

/** No wait running here: a live saved token for `provider` is the answer (its wait finished earlier). */
async function saved(target: Target, provider: string | undefined, agent: Agent): Promise<CallToolResult> {
  const token = provider === undefined ? undefined : await liveToken(target, provider, agent, true);
  if (token !== undefined) return authorizedBy(token, target.base);
  throw notConfigured(
    "NO_PENDING_SESSION",
    `no authorization${provider === undefined ? "" : ` for ${provider}`} is waiting for its approval here: call ath_authorize first, or pass the code the gateway showed as ath_token {code}`,
  );
}


function authorizedBy(token: SavedToken, gateway: string): CallToolResult {
  const out: AuthorizationOutput = {
    status: "authorized",
    gateway,
    agent_id: token.agent_id,
    provider_id: token.provider_id,
    effective_scopes: token.effective_scopes,
    expires_at: token.expires_at,
  };
  return ok(out, `authorized: ${out.provider_id} (${token.effective_scopes.join(", ")}) until ${out.expires_at}. Call ath_request to use it.`);
}

function pending(a: Authorization, registeredNow: boolean, via: "loopback" | "code"): CallToolResult {
  const out: AuthorizationOutput = {
    status: "pending",
    gateway: a.gateway,
    agent_id: a.agent_id,
    provider_id: a.provider_id,
    authorization_url: a.authorization_url,
    ath_session_id: a.ath_session_id,
    scopes: a.scopes,
    ...(registeredNow ? { registered_now: true } : {}),
  };
  const then =
    via === "code"
      ? `After approving, the page shows a code: call ath_token {"code": "<that code>", "session": "${a.ath_session_id}"}.`
      : `Then call ath_token {"provider": "${a.provider_id}"} to wait for the approval (it arrives on this machine's loopback redirect).`;
  return ok(out, `${named(a)}The person must open this URL to approve ${a.provider_id} (${a.scopes.join(", ")}):\n${a.authorization_url}\n${then}`);
}

/** DESIGN §14: a link that leaves the gateway is named before it ("This link opens accounts.example.com. "). */
function named(a: Authorization): string {
  const elsewhere = opensElsewhere(a.authorization_url, a.gateway);
  return elsewhere ? `This link ${elsewhere}, not the gateway. ` : "";
}
