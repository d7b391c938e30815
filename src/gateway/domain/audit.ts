/** Audit trail: `noun.verb` events in the past tense, stored and logged; precise reasons live here, not on the wire. */
import type { AuditEvent } from "../../store/types.ts";
import type { TokenRecord } from "../../store/types.ts";
import type { Gateway } from "../context.ts";

/**
 * Records an event; it reaches the store with the next batch of the gateway's audit queue (ops/audit-queue.ts). The
 * counters of what happened (tokens issued, refreshes, registrations: ops/metrics.ts) are read off the same events.
 */
export async function audit(gw: Gateway, type: string, e: Omit<AuditEvent, "type" | "at"> = {}): Promise<void> {
  gw.auditLog.push({ type, at: gw.now(), ...e });
  gw.metrics.event(type, e);
}

/**
 * A proxied call, once its status is known (DESIGN §20): its time, method, path (no query) and status — never a body
 * or a header — plus, when a person's approval was required, the request's digest (the one the 403 named). The calls
 * of one token within one audit batch (≤ 50 ms) are one `proxy.call` record, `data.calls` in the order they were
 * answered (docs/audit.md): the chain costs a call an array push, not a hash and a row of its own.
 */
export function auditProxyCall(
  gw: Gateway,
  token: Pick<TokenRecord, "client_id" | "agent_id" | "user_id" | "provider_id">,
  c: { method: string; path: string; status: number; request_digest?: string },
): void {
  const at = gw.now();
  // members in canonical (RFC 8785) order, so the record's hash writes each call in one JSON.stringify (protocol/jcs.ts)
  const call: Record<string, unknown> = { at: isoOf(at), method: c.method, path: c.path };
  if (c.request_digest !== undefined) call.request_digest = c.request_digest;
  call.status = c.status;
  // keyed by the token record itself (the cache hands out one object per token): no key string per call
  gw.auditLog.group(token, () => ({
    type: "proxy.call", at, client_id: token.client_id, agent_id: token.agent_id, user_id: token.user_id, provider_id: token.provider_id,
  }), call);
}

// internal

/** The ISO time of the last call's millisecond: calls of one millisecond share it. */
let lastMs = NaN;
let lastIso = "";
function isoOf(ms: number): string {
  if (ms !== lastMs) {
    lastMs = ms;
    lastIso = new Date(ms).toISOString();
  }
  return lastIso;
}
