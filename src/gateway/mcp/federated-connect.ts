/**
 * `{prefix}connect` at a federated MCP URL (DESIGN §22): a member the person has not connected offers this one tool;
 * calling it opens the member's Phase B for this person and client (domain/mcp-federation.ts) and hands the person its
 * URL — as a URL elicitation where the client declared them (2026: an `input_required` round whose retry answers once
 * connected; 2025: MCP's -32042 URLElicitationRequired error, after which the client calls again or lists again), else
 * as the tool's text. Once connected the list grows: 2025 clients are told `tools.listChanged` at `initialize` and find
 * the member's tools at their next `tools/list`; on 2026 the list's `ttlMs` is short while a member is missing.
 */
import { MCP_META } from "../../protocol/mcp-front-door.ts";
import { connectMember } from "../domain/mcp-federation.ts";
import { jsonRpcErrorBody } from "../http/errors.ts";
import { memberDoor, type Fed } from "./federated-members.ts";
import type { Member } from "./federation.ts";
import type { Message } from "./jsonrpc.ts";
import { isObject } from "./sse.ts";

/** The key of ath's connect round among a 2026 request's `inputRequests`. */
export const CONNECT_INPUT = "ath_connect";

/** JSON-RPC error code of MCP's URLElicitationRequiredError (2025-11-25). */
const URL_ELICITATION_REQUIRED = -32042;

export async function federatedConnect(fed: Fed, member: Member, m: Message): Promise<Response> {
  const name = member.record.config.display_name;
  const params = isObject(m.raw.params) ? m.raw.params : {};
  const done = () => Response.json({ jsonrpc: "2.0", id: m.id, result: { content: [{ type: "text", text: `${name} is connected: list the tools again to use it.` }] } });
  // a 2026 retry after the person went through the page: connected now, or asked again
  if (isObject(params.inputResponses) && CONNECT_INPUT in params.inputResponses && (await memberDoor(fed, member)) !== null) return done();
  const url = await connectMember(fed.gw, fed.agent, fed.token, member.record);
  const message = `Connect your ${name} account: open this page and sign in, then the tools of ${name} appear here.`;
  const elicitationId = url.slice(url.lastIndexOf("/") + 1);
  if (fed.held) {
    if (fed.urlElicitation) {
      const elicitations = [{ mode: "url", elicitationId, url, message }];
      return Response.json(jsonRpcErrorBody(m.id, URL_ELICITATION_REQUIRED, message, { ath_error: "CONSENT_REQUIRED", reason: "not_connected", connect_url: url, elicitations }));
    }
  } else if (declaresUrl(params)) {
    const request = { method: "elicitation/create", params: { mode: "url", url, message, elicitationId } };
    return Response.json({ jsonrpc: "2.0", id: m.id, result: { resultType: "input_required", inputRequests: { [CONNECT_INPUT]: request } } });
  }
  return Response.json({
    jsonrpc: "2.0",
    id: m.id,
    result: { content: [{ type: "text", text: `${message}\n${url}` }], structuredContent: { connect_url: url, provider_id: member.record.provider_id } },
  });
}

// internal

function declaresUrl(params: Record<string, unknown>): boolean {
  const meta = isObject(params._meta) ? params._meta : {};
  const caps = isObject(meta[MCP_META.clientCapabilities]) ? meta[MCP_META.clientCapabilities] : {};
  return isObject((caps as Record<string, unknown>).elicitation) && isObject(((caps as Record<string, unknown>).elicitation as Record<string, unknown>).url);
}
