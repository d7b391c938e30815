/**
 * The six tools of `ath mcp` (DESIGN §12), each a thin layer over the flows the CLI commands run (src/agent/flows):
 * parse nothing twice (the SDK checks the input against the schema), call the flow, shape its answer. The
 * authorization tools, which wait for a person, live in mcp/authorize.ts.
 */
import { forTerminal } from "../protocol/sanitize.ts";
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import type { RequestHandlerExtra } from "@modelcontextprotocol/sdk/shared/protocol.js";
import type { CallToolResult, ServerNotification, ServerRequest } from "@modelcontextprotocol/sdk/types.js";
import { discoverGateway, discoverService } from "../agent/client.ts";
import { ClientError, usageError } from "../agent/errors.ts";
import type { Agent, Target } from "../agent/flows/agent.ts";
import { pendingApproval, resend, waitForDecision } from "../agent/flows/approval.ts";
import { OWN_HEADERS, parseMaybeJson, request, utf8, type RequestInput, type RequestResult } from "../agent/flows/request.ts";
import { HEADERS } from "../protocol/constants.ts";
import type { PendingApproval } from "../protocol/lean.ts";
import { revoke } from "../agent/flows/revoke.ts";
import { status } from "../agent/flows/status.ts";
import type { TargetOptions } from "../agent/target.ts";
import {
  AuthorizationOutput,
  AuthorizeToolInput,
  MAX_TOOL_BODY_BYTES,
  ProvidersInput,
  ProvidersOutput,
  RequestOutput,
  RequestToolInput,
  RevokeOutput,
  RevokeToolInput,
  StatusDocument,
  StatusInput,
  TokenToolInput,
} from "../protocol/mcp-tools.ts";
import { authorizeTool, tokenTool } from "./authorize.ts";
import { failed, ok } from "./results.ts";
import type { Waits } from "./waits.ts";

/** What every tool acts with: the server's agent (one home, key and credentials) and `-g`/`-m`/`-s`. */
export interface ToolContext {
  server: McpServer;
  agent: Agent;
  target: TargetOptions;
  waits: Waits;
}

/** One tool call: its abort signal (the host cancelled, or timed out) and a progress report for long waits. */
export interface Call {
  signal: AbortSignal;
  /** Tells the host the call is still waiting (only when the host gave a progressToken). */
  progress: () => void;
}

/** The tool call's own agent: the server's, with the call's abort signal on every request (a cancelled call stops). */
export function forCall(agent: Agent, signal: AbortSignal): Agent {
  return { ...agent, http: { ...agent.http, signal } };
}

export function registerTools(ctx: ToolContext): void {
  const { server } = ctx;
  const guard = <A>(fn: (args: A, call: Call) => Promise<CallToolResult>, provider?: (a: A) => string | undefined) =>
    async (args: A, extra: Extra): Promise<CallToolResult> => {
      try {
        return await fn(args, { signal: extra.signal, progress: progressOf(extra) });
      } catch (e) {
        const p = provider?.(args);
        return failed(e, p === undefined ? {} : { provider: p });
      }
    };

  server.registerTool(
    "ath_providers",
    {
      title: "ATH providers",
      description: "The providers this gateway offers, their scopes, what this agent is approved for, and whether it holds a live token for each.",
      inputSchema: ProvidersInput,
      outputSchema: ProvidersOutput,
      annotations: { readOnlyHint: true, openWorldHint: true },
    },
    guard((_args, call) => providers(ctx, call.signal)),
  );
  server.registerTool(
    "ath_authorize",
    {
      title: "Authorize an ATH provider",
      description:
        "Get the person's consent for a provider (registering the agent at the gateway first when needed). Answers `authorized` " +
        "once a token is saved, or `pending` with an authorization_url the person must open: show it to them, then call ath_token.",
      inputSchema: AuthorizeToolInput,
      outputSchema: AuthorizationOutput,
      annotations: { openWorldHint: true },
    },
    guard((args, call) => authorizeTool(ctx, args, call), (a) => a.provider),
  );
  server.registerTool(
    "ath_token",
    {
      title: "Complete an ATH authorization",
      description:
        "Complete a pending authorization: without a code, wait for the person's approval to arrive (on this machine's loopback " +
        "redirect); with `code` (shown by the gateway after ath_authorize {code_on_page:true}), exchange it. The token is saved.",
      inputSchema: TokenToolInput,
      outputSchema: AuthorizationOutput,
      annotations: { openWorldHint: true },
    },
    guard((args, call) => tokenTool(ctx, args, call), (a) => a.provider),
  );
  server.registerTool(
    "ath_request",
    {
      title: "Call a provider API",
      description:
        "Call the provider's API through the ATH gateway with the saved token. Any upstream status is a result; " +
        `bodies over ${MAX_TOOL_BODY_BYTES} bytes are cut (truncated: true), binary ones are base64.`,
      inputSchema: RequestToolInput,
      outputSchema: RequestOutput,
      annotations: { openWorldHint: true },
    },
    guard((args, call) => callApi(ctx, args, call.signal), (a) => a.provider),
  );
  server.registerTool(
    "ath_status",
    {
      title: "ATH status",
      description: "What this agent has saved: gateways, identity, registrations, tokens (masked) with time left, pending authorizations. No network.",
      inputSchema: StatusInput,
      outputSchema: StatusDocument,
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    guard(async () => {
      const doc = await status({ target: ctx.target, showSecrets: false }, ctx.agent);
      const tokens = doc.registrations.flatMap((r) => r.tokens.filter((t) => !t.expired).map((t) => t.provider_id));
      const who = doc.identity.agent_id ?? "no identity yet";
      return ok(doc, `${who}: ${doc.registrations.length} registration(s); live tokens: ${tokens.length === 0 ? "none" : tokens.join(", ")}`);
    }),
  );
  server.registerTool(
    "ath_revoke",
    {
      title: "Revoke an ATH token",
      description: "Revoke the saved token for a provider (or all: true, every saved token at this gateway) at the gateway, and forget it.",
      inputSchema: RevokeToolInput,
      outputSchema: RevokeOutput,
      annotations: { destructiveHint: true, idempotentHint: true, openWorldHint: true },
    },
    guard(async (args, { signal }) => {
      if (args.all !== true && args.provider === undefined) throw usageError('ath_revoke needs {"provider": "<id>"} or {"all": true}');
      if (args.all === true && args.provider !== undefined) throw usageError("ath_revoke takes provider or all, not both");
      const agent = forCall(ctx.agent, signal);
      const r = await revoke({ target: agent.target(ctx.target), providers: args.all === true ? "all" : [args.provider as string] }, agent);
      return ok(r, r.revoked.length === 0 ? "no token to revoke" : `revoked: ${r.revoked.join(", ")}`);
    }, (a) => a.provider),
  );
}

// internal

type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>;

/** notifications/progress for the call, when the host asked for them with a progressToken. */
function progressOf(extra: Extra): () => void {
  const token = extra._meta?.progressToken;
  if (token === undefined) return () => undefined;
  let n = 0;
  return () => {
    n += 1;
    extra
      .sendNotification({ method: "notifications/progress", params: { progressToken: token, progress: n, message: "waiting for the person's approval" } })
      .catch(() => undefined);
  };
}

async function providers(ctx: ToolContext, signal: AbortSignal): Promise<CallToolResult> {
  const agent = forCall(ctx.agent, signal);
  const target = agent.target(ctx.target);
  const offered = await catalog(target, agent);
  const doc = await status({ target: ctx.target, showSecrets: false }, agent);
  const reg = doc.registrations.find((r) => r.gateway === target.base && r.agent_id === doc.identity.agent_id);
  const out: ProvidersOutput = {
    gateway: target.base,
    agent_id: doc.identity.agent_id,
    registered: reg !== undefined,
    ...(reg === undefined ? {} : { agent_status: reg.agent_status as NonNullable<ProvidersOutput["agent_status"]> }),
    providers: offered.map((p) => {
      const token = reg?.tokens.find((t) => t.provider_id === p.provider_id && !t.expired);
      return {
        ...p,
        approved_scopes: reg?.approved_providers.find((a) => a.provider_id === p.provider_id)?.approved_scopes ?? [],
        token_held: token !== undefined,
        ...(token === undefined ? {} : { token_scopes: token.effective_scopes, token_expires_at: token.expires_at }),
      };
    }),
  };
  // the gateway's words, one line each: none can forge a line of the summary (DESIGN §14)
  const one = (s: string) => forTerminal(s, { multiline: false });
  const lines = out.providers.map((p) => `${one(p.provider_id)} (${one(p.display_name)}): ${p.available_scopes.map(one).join(", ")}${p.token_held ? " — token held" : ""}`);
  return ok(out, `${out.providers.length} provider(s) at ${one(out.gateway)}${out.registered ? "" : " (not registered yet)"}:\n${lines.join("\n")}`);
}

/** The providers on offer: the gateway's catalog, or a native service's one app. */
async function catalog(target: Target, agent: Agent): Promise<{ provider_id: string; display_name: string; available_scopes: string[] }[]> {
  if (target.native) {
    const doc = await discoverService(target.base, agent.http);
    return [{ provider_id: doc.app_id, display_name: doc.name, available_scopes: doc.auth.scopes_supported }];
  }
  const doc = await discoverGateway(target.base, agent.http);
  return doc.supported_providers.map((p) => ({ provider_id: p.provider_id, display_name: p.display_name, available_scopes: p.available_scopes }));
}

async function callApi(ctx: ToolContext, args: RequestToolInput, signal: AbortSignal): Promise<CallToolResult> {
  const agent = forCall(ctx.agent, signal);
  const method = args.method.toUpperCase();
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(args.headers ?? {})) {
    const lower = name.toLowerCase();
    if (OWN_HEADERS.has(lower)) throw usageError(`headers.${name} cannot be given: ath sends it (the saved ATH token / the agent id)`);
    headers[lower] = headers[lower] === undefined ? value : `${headers[lower]}, ${value}`;
  }
  let body: string | undefined;
  if (args.body !== undefined) {
    // RFC 9110 §9.3.1-2: a body on GET/HEAD has no defined meaning, and fetch refuses to send one.
    if (method === "GET" || method === "HEAD") throw usageError(`a body cannot be sent with ${method}: use POST, PUT or PATCH, or the query`);
    if (typeof args.body === "string") body = args.body;
    else {
      body = JSON.stringify(args.body);
      headers["content-type"] ??= "application/json";
    }
  }
  const path = withQuery(args.path, args.query);
  if (args.approval_id !== undefined) headers[HEADERS.approval] = args.approval_id;
  const input = { target: agent.target(ctx.target), provider: args.provider, method, path, headers, ...(body === undefined ? {} : { body }), keep: MAX_TOOL_BODY_BYTES };
  let r = await request(input, agent);
  const pending = pendingApproval(r);
  // A person must approve this exact request (DESIGN §15): a host with URL elicitation sends them to the page.
  if (pending !== undefined) r = await approvedResend(ctx, input, r, pending, args, signal);
  if (r.refusal !== undefined) {
    throw new ClientError("refused", r.refusal.code, `${method} ${r.url}: ${r.status} ${r.refusal.code} — ${r.refusal.message}`, { status: r.status });
  }
  const text = textOf(r.body, r.truncated);
  const out: RequestOutput = {
    status: r.status,
    headers: Object.fromEntries(r.headers),
    ...(text === undefined ? { body: r.body.toBase64(), body_encoding: "base64" as const } : { body: r.truncated ? text : parseMaybeJson(text) }),
    ...(r.truncated ? { truncated: true } : {}),
  };
  const size = `${r.body.byteLength} bytes${r.truncated ? `, truncated at ${MAX_TOOL_BODY_BYTES}` : ""}`;
  const head = `${method} ${path} → HTTP ${r.status} (${r.headers.get("content-type") ?? "no content type"}, ${size})`;
  // Hosts that show the model only the text content still get the answer (binary stays in structuredContent).
  return ok(out, text === undefined ? `${head}\n(binary body: base64 in structuredContent.body)` : `${head}\n\n${text}`);
}

/**
 * Asks the host to send the person to the approval page (URL-mode elicitation), waits for their decision (up to
 * `wait_seconds`, default 45, never past the approval's expiry) and resends; the request's refusal as it was when the
 * host has no elicitation, the person declines, or the wait runs out — its details name the approval to resend with.
 */
async function approvedResend(
  ctx: ToolContext,
  input: RequestInput,
  r: RequestResult,
  pending: PendingApproval,
  args: RequestToolInput,
  signal: AbortSignal,
): Promise<RequestResult> {
  const agent = forCall(ctx.agent, signal);
  const refused = () => {
    throw new ClientError("refused", "APPROVAL_REQUIRED", `${input.method} ${r.url} needs a person's approval: open ${pending.approval_url}, then call ath_request again with the same arguments and approval_id`, {
      status: r.status,
      details: { ...pending },
    });
  };
  if (ctx.server.server.getClientCapabilities()?.elicitation?.url === undefined) return refused();
  let action: string;
  try {
    const answer = await ctx.server.server.elicitInput(
      {
        mode: "url",
        elicitationId: pending.approval_id,
        url: pending.approval_url,
        message: forTerminal(`Approve this exact request before the agent sends it: ${input.method} ${input.path} to ${input.provider} (ATH gateway ${input.target.base}).`, { multiline: false }),
      },
      { signal },
    );
    action = answer.action;
  } catch {
    return refused();
  }
  if (action !== "accept") {
    throw new ClientError("failure", "CANCELLED", `the person ${action === "decline" ? "declined" : "dismissed"} the request to open the approval page: nothing was sent`);
  }
  const deadline = AbortSignal.any([signal, AbortSignal.timeout((args.wait_seconds ?? 45) * 1000)]);
  let decision: string;
  try {
    decision = await waitForDecision(input, r.provider, pending, agent, { intervalMs: 1000, signal: deadline });
  } catch (e) {
    if (signal.aborted) throw e;
    return refused();
  }
  await ctx.server.server.createElicitationCompletionNotifier(pending.approval_id)().catch(() => undefined);
  if (decision === "denied") {
    throw new ClientError("refused", "APPROVAL_DENIED", `the person denied ${input.method} ${input.path}: it was not sent`, { details: { approval_id: pending.approval_id } });
  }
  if (decision !== "approved") {
    throw new ClientError("refused", "APPROVAL_REQUIRED", `the approval ${pending.approval_id} is ${decision}: nothing was sent; call ath_request again to ask anew`, { details: { approval_id: pending.approval_id, status: decision } });
  }
  return resend(input, pending.approval_id, agent);
}

/** `path` with `query` added to its own query string. */
function withQuery(path: string, query: RequestToolInput["query"]): string {
  if (query === undefined || Object.keys(query).length === 0) return path;
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) for (const one of Array.isArray(v) ? v : [v]) q.append(k, one);
  return `${path}${path.includes("?") ? "&" : "?"}${q}`;
}

/** The body as text when it is UTF-8; a cut body may end inside a character, which is dropped. */
function textOf(bytes: Uint8Array, truncated: boolean): string | undefined {
  const whole = utf8(bytes);
  if (whole !== undefined || !truncated) return whole;
  for (let cut = 1; cut <= 3 && cut < bytes.byteLength; cut++) {
    const text = utf8(bytes.subarray(0, bytes.byteLength - cut));
    if (text !== undefined) return text;
  }
  return undefined;
}
