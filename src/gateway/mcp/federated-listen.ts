/**
 * A 2026 `subscriptions/listen` at a federated URL (DESIGN §21, §22): one stream for the client, made of one listen at
 * each member the person connected (through the member's own door, bridged to a 2025-only upstream's GET stream
 * there) — each asked for the resource subscriptions that route to it, under its own URIs. The members' notifications
 * reach the client merged as they come, a resource's URI as the client named it; the acknowledgement once. The stream
 * ends when the client hangs up or every member's has ended.
 */
import { federatedUri, routeUri } from "./federation.ts";
import { memberDoor, sendToMember, type Fed } from "./federated-members.ts";
import type { Message } from "./jsonrpc.ts";
import { event, isObject, messagesOf } from "./sse.ts";

export async function federatedListen(fed: Fed, m: Message, text: string): Promise<Response> {
  const params = isObject(m.raw.params) ? m.raw.params : {};
  const asked = isObject(params.notifications) ? params.notifications : {};
  const uris = Array.isArray(asked.resourceSubscriptions) ? asked.resourceSubscriptions.filter((u): u is string => typeof u === "string") : [];
  const stop = new AbortController();
  const opened: { res: Response; member: (typeof fed.f.members)[number] }[] = [];
  for (const member of fed.f.members) {
    const door = await memberDoor(fed, member);
    if (!door) continue;
    const own = uris.flatMap((u) => {
      const r = routeUri(fed.f, u);
      return r && r.member === member ? [r.uri] : [];
    });
    const res = await sendToMember(fed, door, m, text, { notifications: JSON.stringify({ ...asked, resourceSubscriptions: own }) });
    // one member alone is that member's answer, as it gave it (a refusal included)
    if (fed.f.members.length === 1) return res;
    if (res.ok) opened.push({ res, member });
    else await res.body?.cancel();
  }
  const encoder = new TextEncoder();
  let acknowledged = false;
  let open = opened.length;
  const body = new ReadableStream<Uint8Array>({
    start(c) {
      if (open === 0) return c.close();
      for (const { res, member } of opened) {
        void (async () => {
          try {
            for await (const msg of messagesOf(res, stop.signal)) {
              if (msg.method === "notifications/subscriptions/acknowledged") {
                if (acknowledged) continue;
                acknowledged = true;
              }
              const p = isObject(msg.params) ? msg.params : null;
              const shaped = p && typeof p.uri === "string" ? { ...msg, params: { ...p, uri: federatedUri(member, p.uri) } } : msg;
              c.enqueue(encoder.encode(event(shaped)));
            }
          } catch {
            // this member's stream broke: the others go on
          } finally {
            if (--open === 0 && !stop.signal.aborted) c.close();
          }
        })();
      }
    },
    cancel() {
      stop.abort();
    },
  });
  return new Response(body, { headers: { "content-type": "text/event-stream", "cache-control": "no-store" } });
}
