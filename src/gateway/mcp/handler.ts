/**
 * POST/GET/DELETE /mcp/{provider_id} — the MCP front door's Streamable HTTP endpoint (DESIGN §18). The MCP client's
 * token (ath's, bound to this resource) is checked and swapped for the person's upstream token; each JSON-RPC message
 * is read strictly (jsonrpc.ts) and judged by the one call decision (judge.ts) — a step-up 403, a refusal or an
 * approval as a JSON-RPC error, never forwarded; everything else goes to the upstream MCP server through the one relay
 * (proxy/relay.ts), its answer (JSON or `text/event-stream`) streamed back with `Mcp-Session-Id` and
 * `MCP-Protocol-Version` passed through both ways. Refusals of the door itself are thrown (BearerChallenge,
 * JsonRpcError, AthError): the pipeline's boundary answers them.
 */
import { AthError } from "../../protocol/index.ts";
import { MCP_REFUSED } from "../../protocol/mcp-front-door.ts";
import type { TokenRecord } from "../../store/types.ts";
import type { Call } from "../context.ts";
import { listable } from "../domain/call.ts";
import { readBounded } from "../http/body.ts";
import { jsonRpcErrorBody } from "../http/errors.ts";
import { bearerToken } from "../http/request.ts";
import { apiHeaders } from "../oauth/quirks.ts";
import { agentResponseHeaders, upstreamRequestHeaders } from "../proxy/headers.ts";
import { sendOnce, type PreparedBody } from "../proxy/relay.ts";
import { insufficientScope, reauthorize, requireMcpToken } from "./access.ts";
import { note } from "./evidence.ts";
import { readMessages, type Message, type Posted } from "./jsonrpc.ts";
import { judge, type Judgement, type Refusal } from "./judge.ts";
import { findMcpProvider } from "./providers.ts";
import { declaresUrlElicitation, rememberSession, urlElicitationDeclared } from "../domain/mcp-sessions.ts";
import { filterToolLists } from "./tools-list.ts";

/** How long an authenticated MCP request may stay idle: a GET stream, a long tool call (Bun's maximum). */
const MCP_IDLE_TIMEOUT_S = 255;

/** JSON-RPC error code of MCP's URLElicitationRequiredError (2025-11-25). */
const URL_ELICITATION_REQUIRED = -32042;

export async function mcp(call: Call): Promise<Response> {
  const { gw, req } = call;
  const providerId = call.params.provider_id!;
  const record = await findMcpProvider(gw, providerId);
  if (!record) throw new AthError("NOT_FOUND", `No MCP server '${providerId}' is fronted here`);
  if (req.method !== "POST" && req.method !== "GET" && req.method !== "DELETE") {
    throw new AthError("METHOD_NOT_ALLOWED", `The MCP endpoint takes POST, GET and DELETE`, undefined, { headers: { allow: "POST, GET, DELETE" } });
  }
  const { token, agent } = await requireMcpToken(gw, req, record);
  await call.identify({ client_id: token.client_id, provider_id: providerId });
  if (!token.grant_id) throw reauthorize(gw, record, "The sign-in at the upstream is gone; authorize again");
  gw.extendTimeout?.(req, MCP_IDLE_TIMEOUT_S);
  const caller = { config: record.config, agent, token };

  let posted: Posted = { batch: false, messages: [] };
  let judged: Judgement | null = null;
  let body: PreparedBody = { data: null, replayable: true };
  if (req.method === "POST") {
    const bytes = await readBounded(req.body, req.headers.get("content-length"), gw.opts.maxProxyBody, () =>
      new AthError("PAYLOAD_TOO_LARGE", `The request body exceeds ${gw.opts.maxProxyBody} bytes (--max-proxy-body)`, { limit: gw.opts.maxProxyBody }),
    );
    posted = readMessages(bytes);
    judged = await judge(gw, caller, posted.messages, posted.batch);
    if (judged.stepUp) {
      await note(gw, token, posted.messages, "insufficient_scope");
      throw insufficientScope(gw, record, judged.stepUp);
    }
    if (judged.refusals.size) return refused(call, token, posted, judged.refusals);
    body = { data: bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer, replayable: true };
  }

  const approved = judged?.approved ?? false;
  let res: Response;
  try {
    res = await sendOnce(gw, {
      providerId,
      grantId: token.grant_id,
      method: req.method,
      target: new URL(record.config.mcp!.url),
      headers: upstreamRequestHeaders(req.headers, apiHeaders(record.config)),
      body,
      once: approved,
      remaining: judged?.remaining ?? null,
      presented: bearerToken(req)!,
    });
  } catch (err) {
    // The person's upstream sign-in is dead (refused at refresh), or the token was revoked under this call: the client
    // must authorize again.
    if (err instanceof AthError && (err.details?.reason === "upstream_grant_revoked" || err.code === "TOKEN_REVOKED")) {
      await note(gw, token, posted.messages, "upstream_grant_revoked");
      throw reauthorize(gw, record, "The sign-in at the upstream ended; authorize again");
    }
    throw err;
  }
  if (res.status === 401) {
    await res.body?.cancel();
    await note(gw, token, posted.messages, "upstream_401");
    // Refreshed and still refused (or not refreshable): only a new sign-in can help — ath's challenge, not the upstream's.
    if (!approved) throw reauthorize(gw, record, "The upstream refuses the sign-in; authorize again");
    // The approved call was sent once and refused; the grant is refreshed for the next call, which needs a new approval.
    const data = { ath_error: "UPSTREAM_UNAVAILABLE", reason: "upstream_rejected_token" };
    return rpcAnswer(posted, (m) => jsonRpcErrorBody(m.id, MCP_REFUSED, "The upstream refused the person's token for this approved call; it was not resent", data));
  }
  if (res.status >= 300 && res.status < 400) {
    // Never relayed: the client would follow it with its body and its ath token to an origin the upstream chose.
    await res.body?.cancel();
    await note(gw, token, posted.messages, `upstream_${res.status}`);
    throw new AthError("UPSTREAM_UNAVAILABLE", `The MCP server answered with a redirect (${res.status}); ath does not follow or relay redirects`, { reason: "upstream_redirect" });
  }
  await note(gw, token, posted.messages, res.status < 400 ? "forwarded" : `upstream_${res.status}`);
  const opened = res.headers.get("mcp-session-id");
  const init = posted.messages.find((m) => m.call?.method === "initialize");
  if (init && res.ok && opened) await rememberSession(gw, token, opened, declaresUrlElicitation(init.raw.params));
  const out = agentResponseHeaders(res.headers);
  // The upstream's own challenge would send the client to the upstream's authorization server: ath is its AS.
  delete out["www-authenticate"];
  // tools/list answers only the tools this client may call (tools-list.ts); nothing to filter without rules.
  const listIds = new Set(posted.messages.filter((m) => m.call?.method === "tools/list" && m.id !== undefined).map((m) => JSON.stringify(m.id)));
  const c = record.config;
  if (listIds.size && res.ok && (c.scope_rules || c.policy || agent.policy || gw.opts.strictScopes)) {
    return filterToolLists(res, listIds, (name) => listable(gw, caller, name), out);
  }
  return new Response(res.body, { status: res.status, statusText: res.statusText, headers: out });
}

// internal

/** The POST's answer when a call of it is refused: each request's JSON-RPC error; nothing was forwarded. */
async function refused({ gw, req }: Call, token: TokenRecord, posted: Posted, refusals: Map<Message, Refusal>): Promise<Response> {
  for (const [m, r] of refusals) await note(gw, token, [m], r.ath_error === "APPROVAL_REQUIRED" ? "approval_required" : "refused");
  const elicit = await urlElicitationDeclared(gw, req, token);
  return rpcAnswer(posted, (m) => {
    const r = refusals.get(m) ?? { ath_error: "POLICY_DENIED", reason: "another call of this batch was refused", message: "Not sent: another call of this batch was refused" };
    const data = { ath_error: r.ath_error, reason: r.reason, ...r.data };
    // A client that declared URL-mode elicitation is asked to open the approval page as one (MCP 2025-11-25).
    if (elicit && r.ath_error === "APPROVAL_REQUIRED" && r.data?.approval_url) {
      const elicitations = [{ mode: "url", elicitationId: r.data.approval_id, url: r.data.approval_url, message: r.message }];
      return jsonRpcErrorBody(m.id, URL_ELICITATION_REQUIRED, r.message, { ...data, elicitations });
    }
    return jsonRpcErrorBody(m.id, MCP_REFUSED, r.message, data);
  });
}

/** One JSON-RPC answer per request of the POST (notifications get none), as one message or a batch. */
function rpcAnswer(posted: Posted, answer: (m: Message) => unknown): Response {
  const answers = posted.messages.filter((m) => m.call && m.id !== undefined).map(answer);
  return new Response(JSON.stringify(posted.batch ? answers : (answers[0] ?? null)), { status: 200, headers: { "content-type": "application/json" } });
}
