/**
 * `{prefix}connect` at a federated MCP URL (DESIGN §22): a member the person has not connected offers this one tool;
 * calling it opens the member's Phase B for this person and client (domain/mcp-federation.ts) and hands the person its
 * URL — as a URL elicitation where the client declared them (2026: an `input_required` round whose retry answers once
 * connected; 2025: MCP's -32042 URLElicitationRequired error, after which the client calls again or lists again), else
 * as the tool's text. Once connected the list grows: a 2025 session's GET stream says `notifications/tools/list_changed`
 * (connectStream); on 2026 the list's `ttlMs` is short while a member is missing.
 */
import { MCP_META } from "../../protocol/mcp-front-door.ts";
import { connectMember } from "../domain/mcp-federation.ts";
import { jsonRpcErrorBody } from "../http/errors.ts";
import { memberDoor, type Fed } from "./federated-members.ts";
import type { Member } from "./federation.ts";
import type { Message } from "./jsonrpc.ts";
import { event, isObject } from "./sse.ts";

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

/** How often the 2025 stream looks for a member the person has just connected. */
export const CONNECT_POLL_MS = 1_000;

/**
 * The GET stream of a 2025 session at a federated URL: `notifications/tools/list_changed` each time the members this
 * person has connected change (a connect completed, a sign-in ended), looked for every CONNECT_POLL_MS. The stream opens
 * at once (a comment line), keeps alive every 10 s, and ends when the client hangs up.
 */
export function connectStream(fed: Fed): Response {
  const encoder = new TextEncoder();
  let ended = false;
  const connected = async () => (await Promise.all(fed.f.members.map(async (m) => ((await memberDoor(fed, m)) ? m.record.provider_id : "")))).join(",");
  const body = new ReadableStream<Uint8Array>({
    async start(c) {
      c.enqueue(encoder.encode(": stream open\n\n"));
      let last = await connected().catch(() => "");
      let quiet = 0;
      void (async () => {
        while (!ended) {
          await Bun.sleep(CONNECT_POLL_MS);
          if (ended) return;
          try {
            const now = await connected();
            if (now !== last) {
              last = now;
              c.enqueue(encoder.encode(event({ jsonrpc: "2.0", method: "notifications/tools/list_changed" })));
              quiet = 0;
            } else if (++quiet * CONNECT_POLL_MS >= 10_000) {
              c.enqueue(encoder.encode(": keep-alive\n\n"));
              quiet = 0;
            }
          } catch {
            // the store failed this once: looked at again next time
          }
        }
      })();
    },
    cancel() {
      ended = true;
    },
  });
  return new Response(body, { headers: { "content-type": "text/event-stream", "cache-control": "no-store" } });
}
