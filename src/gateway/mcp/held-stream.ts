/**
 * The GET stream of a session ath holds (DESIGN §21 "Pinned": `subscriptions/listen` bridged to the 2025 GET stream,
 * per person): the upstream's `subscriptions/listen` for every list change and the resources the client subscribed
 * to; its notifications reach the client as 2025 sends them — without the subscription id, the acknowledgement kept
 * back. The stream opens at once (a comment line) and ends when either side hangs up.
 */
import { MCP_META, MCP_WIRE } from "../../protocol/mcp-front-door.ts";
import type { HeldSession } from "../domain/mcp-sessions.ts";
import { sendUpstream, type Door } from "./forward.ts";
import { standardHeaders } from "./headers.ts";
import { event, isObject, messagesOf } from "./sse.ts";

export async function heldStream(door: Door, held: HeldSession): Promise<Response> {
  const stop = new AbortController();
  const encoder = new TextEncoder();
  const listen = {
    jsonrpc: "2.0",
    id: `ath-listen-${crypto.randomUUID()}`,
    method: "subscriptions/listen",
    params: {
      notifications: { toolsListChanged: true, promptsListChanged: true, resourcesListChanged: true, resourceSubscriptions: held.subscriptions },
      _meta: { [MCP_META.protocolVersion]: MCP_WIRE.stateless, [MCP_META.clientCapabilities]: held.capabilities, [MCP_META.clientInfo]: held.clientInfo },
    },
  };
  let ended = false;
  const relay = async (c: ReadableStreamDefaultController<Uint8Array>) => {
    try {
      const body = encoder.encode(JSON.stringify(listen));
      const headers = { "content-type": "application/json", accept: "application/json, text/event-stream", ...standardHeaders(listen.method, listen.params, MCP_WIRE.stateless, []) };
      const res = await sendUpstream(door, [], { method: "POST", body: { data: body.buffer as ArrayBuffer, replayable: true }, headers, once: false, remaining: null, stateless: true });
      if (!res.ok) return void (await res.body?.cancel());
      for await (const msg of messagesOf(res, stop.signal)) {
        if (typeof msg.method !== "string" || "id" in msg || msg.method === "notifications/subscriptions/acknowledged") continue;
        const p = isObject(msg.params) ? msg.params : {};
        const meta = isObject(p._meta) ? Object.fromEntries(Object.entries(p._meta).filter(([k]) => k !== MCP_META.subscriptionId)) : {};
        const { _meta: _, ...rest } = p;
        c.enqueue(encoder.encode(event({ jsonrpc: "2.0", method: msg.method, params: { ...rest, ...(Object.keys(meta).length ? { _meta: meta } : {}) } })));
      }
    } catch {
      // the upstream's stream could not be had, or broke: the client's ends with it
    } finally {
      if (!ended) {
        ended = true;
        c.close();
      }
    }
  };
  const body = new ReadableStream<Uint8Array>({
    start(c) {
      c.enqueue(encoder.encode(": stream open\n\n"));
      void relay(c);
    },
    cancel() {
      ended = true;
      stop.abort();
    },
  });
  return new Response(body, { headers: { "content-type": "text/event-stream", "cache-control": "no-store" } });
}
