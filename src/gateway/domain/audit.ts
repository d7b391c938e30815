/** Audit trail: `noun.verb` events in the past tense, stored and logged; precise reasons live here, not on the wire. */
import type { AuditEvent } from "../../store/types.ts";
import type { Gateway } from "../context.ts";

/**
 * Records an event; it reaches the store with the next batch of the gateway's audit queue (ops/audit-queue.ts). The
 * counters of what happened (tokens issued, refreshes, registrations: ops/metrics.ts) are read off the same events.
 */
export async function audit(gw: Gateway, type: string, e: Omit<AuditEvent, "type" | "at"> = {}): Promise<void> {
  gw.auditLog.push({ type, at: gw.now(), ...e });
  gw.metrics.event(type, e);
}
