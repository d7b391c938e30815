/**
 * `subscriptions/listen` for a 2026 client in front of a 2025-only upstream (DESIGN §21 "Pinned": bridged to the 2025
 * GET stream, per person): ath opens a session of the stream's own at the upstream (a 2025 session has one stream),
 * subscribes the resources the filter names, and opens its GET stream; the client's stream starts with
 * `notifications/subscriptions/acknowledged`, then carries the upstream's change notifications the filter asked for,
 * each stamped with the subscription id (the request's id). The client hanging up ends the upstream session.
 */
import { MCP_ERROR, MCP_META } from "../../protocol/mcp-front-door.ts";
import { JsonRpcError } from "../http/errors.ts";
import { sendUpstream, type Door } from "./forward.ts";
import type { Message } from "./jsonrpc.ts";
import { event, isObject, messagesOf } from "./sse.ts";
import { endSession, openSession, sessionHeaders, type UpstreamSession } from "./upstream-session.ts";

export async function bridgeListen(door: Door, m: Message, capabilities: Record<string, unknown>): Promise<Response> {
  const params = isObject(m.raw.params) ? m.raw.params : {};
  const filter = params.notifications;
  if (!isObject(filter)) throw new JsonRpcError(400, m.id ?? null, MCP_ERROR.invalidParams, "Invalid params: 'notifications' is required and must be a valid SubscriptionFilter");
  const uris = Array.isArray(filter.resourceSubscriptions) ? filter.resourceSubscriptions.filter((u): u is string => typeof u === "string") : [];
  const stamp = { [MCP_META.subscriptionId]: m.id };
  const wanted = (msg: Record<string, unknown>): boolean => {
    const p = isObject(msg.params) ? msg.params : {};
    if (msg.method === "notifications/resources/updated") return typeof p.uri === "string" && uris.includes(p.uri);
    const flag = FLAGS[String(msg.method)];
    return flag !== undefined && filter[flag] === true;
  };
  const stop = new AbortController();
  const encoder = new TextEncoder();
  let session: UpstreamSession | null = null;
  let ended = false;
  const end = async () => {
    if (ended) return;
    ended = true;
    stop.abort();
    if (session) await endSession(door, session);
  };
  const ack = (c: ReadableStreamDefaultController<Uint8Array>) =>
    c.enqueue(encoder.encode(event({ jsonrpc: "2.0", method: "notifications/subscriptions/acknowledged", params: { notifications: filter, _meta: stamp } })));
  // The client's stream opens at once; the acknowledgement follows once the upstream's stream is open — or, since an
  // upstream's GET stream may show nothing until its first event, LISTEN_SETTLE_MS after ath asked for it.
  const relay = async (c: ReadableStreamDefaultController<Uint8Array>) => {
    let acked = false;
    try {
      session = await openSession(door, capabilities);
      for (const [n, uri] of uris.entries()) {
        const body = new TextEncoder().encode(JSON.stringify({ jsonrpc: "2.0", id: `ath-subscribe-${n}`, method: "resources/subscribe", params: { uri } }));
        const res = await sendUpstream(door, [], { method: "POST", body: { data: body.buffer as ArrayBuffer, replayable: true }, headers: sessionHeaders(session), once: false, remaining: null, stateless: false });
        await res.body?.cancel();
      }
      if (ended) return;
      const opening = sendUpstream(door, [m], { method: "GET", body: { data: null, replayable: true }, headers: { ...sessionHeaders(session), accept: "text/event-stream" }, once: false, remaining: null, stateless: false });
      await Promise.race([opening.catch(() => undefined), Bun.sleep(LISTEN_SETTLE_MS)]);
      ack(c);
      acked = true;
      const stream = await opening;
      if (!stream.ok) return void (await stream.body?.cancel());
      for await (const msg of messagesOf(stream, stop.signal)) {
        if (typeof msg.method !== "string" || "id" in msg || !wanted(msg)) continue;
        const p = isObject(msg.params) ? msg.params : {};
        c.enqueue(encoder.encode(event({ ...msg, params: { ...p, _meta: { ...(isObject(p._meta) ? p._meta : {}), ...stamp } } })));
      }
    } catch {
      // the upstream's stream could not be had, or broke: the client's ends with it
    }
    if (!ended) {
      if (!acked) ack(c);
      c.close();
    }
    await end();
  };
  const body = new ReadableStream<Uint8Array>({
    start(c) {
      void relay(c);
    },
    cancel: end,
  });
  return new Response(body, { headers: { "content-type": "text/event-stream", "cache-control": "no-store" } });
}

/** How long after asking for the upstream's stream ath takes it as open when it has shown nothing yet. */
export const LISTEN_SETTLE_MS = 250;

// internal

/** The filter flag each list-change notification needs. */
const FLAGS: Record<string, string> = {
  "notifications/tools/list_changed": "toolsListChanged",
  "notifications/prompts/list_changed": "promptsListChanged",
  "notifications/resources/list_changed": "resourcesListChanged",
};
