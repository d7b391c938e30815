/**
 * Sending a judged POST (or a GET/DELETE) to the upstream MCP server — for both wires — through the one relay
 * (proxy/relay.ts `sendOnce`: the person's upstream token, the 401 rule, the status check, the budget header), and what
 * follows its answer: a dead sign-in becomes ath's own challenge, a redirect is never relayed, every call is audited,
 * the upstream's `WWW-Authenticate` is dropped (ath is the client's authorization server), and list answers are
 * filtered per person (tools-list.ts; on the 2026 wire with caching hints, and their schemas learnt for the header
 * checks).
 */
import { AthError } from "../../protocol/index.ts";
import { MCP_REFUSED } from "../../protocol/mcp-front-door.ts";
import type { ProviderRecord, TokenRecord } from "../../store/types.ts";
import type { Gateway } from "../context.ts";
import { listable, type Caller } from "../domain/call.ts";
import { jsonRpcErrorBody } from "../http/errors.ts";
import { bearerToken } from "../http/request.ts";
import { apiHeaders } from "../oauth/quirks.ts";
import { agentResponseHeaders, upstreamRequestHeaders, type HeaderFields } from "../proxy/headers.ts";
import { sendOnce, type PreparedBody } from "../proxy/relay.ts";
import { reauthorize } from "./access.ts";
import { note } from "./evidence.ts";
import type { Message, Posted } from "./jsonrpc.ts";
import { learnTools } from "./tool-schemas.ts";
import { rewriteLists, type ListRewrite } from "./tools-list.ts";

/** One request at the MCP door, once its token opened it. */
export interface Door {
  gw: Gateway;
  req: Request;
  record: ProviderRecord;
  caller: Caller;
  token: TokenRecord;
}

export interface Sending {
  method: string;
  body: PreparedBody;
  /** The headers sent (default: the client's, as the proxy filters them). */
  headers?: HeaderFields;
  /** Sent under a person's approval: at most once. */
  once: boolean;
  remaining: number | null;
  /** The 2026 wire: lists ath filters carry caching hints. */
  stateless: boolean;
}

/** Sends to the upstream and shapes its answer for the client. */
export async function forward(door: Door, posted: Posted, s: Sending): Promise<Response> {
  const res = await sendUpstream(door, posted.messages, s);
  const out = agentResponseHeaders(res.headers);
  // The upstream's own challenge would send the client to the upstream's authorization server: ath is its AS.
  delete out["www-authenticate"];
  const rewrite = listRewrite(door, posted.messages, s.stateless);
  if (rewrite && res.ok) return rewriteLists(res, rewrite, out);
  return new Response(res.body, { status: res.status, statusText: res.statusText, headers: out });
}

/**
 * The upstream's answer to one send, audited: a refused sign-in or a revoked grant is ath's 401 challenge (or, for an
 * approved call sent once, its JSON-RPC error), a redirect a 502 — never relayed.
 */
export async function sendUpstream(door: Door, messages: readonly Message[], s: Sending): Promise<Response> {
  const { gw, req, record, token } = door;
  let res: Response;
  try {
    res = await sendOnce(gw, {
      providerId: record.provider_id,
      grantId: token.grant_id!,
      method: s.method,
      target: new URL(record.config.mcp!.url),
      headers: s.headers ?? mcpRequestHeaders(door),
      body: s.body,
      once: s.once,
      remaining: s.remaining,
      presented: bearerToken(req)!,
    });
  } catch (err) {
    // The person's upstream sign-in is dead (refused at refresh), or the token was revoked under this call: the client
    // must authorize again.
    if (err instanceof AthError && (err.details?.reason === "upstream_grant_revoked" || err.code === "TOKEN_REVOKED")) {
      await note(gw, token, messages, "upstream_grant_revoked");
      throw reauthorize(gw, record, "The sign-in at the upstream ended; authorize again");
    }
    throw err;
  }
  if (res.status === 401) {
    await res.body?.cancel();
    await note(gw, token, messages, "upstream_401");
    // Refreshed and still refused (or not refreshable): only a new sign-in can help — ath's challenge, not the upstream's.
    if (!s.once) throw reauthorize(gw, record, "The upstream refuses the sign-in; authorize again");
    // The approved call was sent once and refused; the grant is refreshed for the next call, which needs a new approval.
    const data = { ath_error: "UPSTREAM_UNAVAILABLE", reason: "upstream_rejected_token" };
    const answers = messages.filter((m) => m.call && m.id !== undefined).map((m) => jsonRpcErrorBody(m.id, MCP_REFUSED, "The upstream refused the person's token for this approved call; it was not resent", data));
    return Response.json(answers.length === 1 ? answers[0] : answers);
  }
  if (res.status >= 300 && res.status < 400) {
    // Never relayed: the client would follow it with its body and its ath token to an origin the upstream chose.
    await res.body?.cancel();
    await note(gw, token, messages, `upstream_${res.status}`);
    throw new AthError("UPSTREAM_UNAVAILABLE", `The MCP server answered with a redirect (${res.status}); ath does not follow or relay redirects`, { reason: "upstream_redirect" });
  }
  await note(gw, token, messages, res.status < 400 ? "forwarded" : `upstream_${res.status}`);
  return res;
}


/** The client's headers as the upstream may see them: the proxy's rules, the provider's api_headers, no Origin. */
export function mcpRequestHeaders(door: Door): HeaderFields {
  const out = upstreamRequestHeaders(door.req.headers, apiHeaders(door.record.config));
  // ath checked the browser's origin against itself; to the upstream, ath is the client (no browser is there).
  delete out.origin;
  return out;
}

/** How the answers to the tools/list requests `ids` (as JSON) are rewritten, or null when they pass untouched. */
export function listRewriteFor(door: Door, ids: ReadonlySet<string>, stateless: boolean): ListRewrite | null {
  const { gw, caller, record } = door;
  if (ids.size === 0) return null;
  const c = caller.config;
  const filters = Boolean(c.scope_rules || c.policy || caller.agent.policy || gw.opts.strictScopes);
  // On the 2026 wire ath reads every tool list it relays: the schemas say which arguments Mcp-Param-* headers mirror.
  if (!filters && !stateless) return null;
  return {
    ids,
    keep: filters ? (name) => listable(gw, caller, name) : () => true,
    hints: filters && stateless,
    seen: stateless ? (tools) => learnTools(gw, record.provider_id, tools) : undefined,
  };
}

// internal

/** The list answers of this POST ath rewrites, or null: filtered when rules may hide tools, always read on 2026. */
function listRewrite(door: Door, messages: readonly Message[], stateless: boolean): ListRewrite | null {
  const ids = new Set(messages.filter((m) => m.call?.method === "tools/list" && m.id !== undefined).map((m) => JSON.stringify(m.id)));
  return listRewriteFor(door, ids, stateless);
}
