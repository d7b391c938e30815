/** Audit trail: `noun.verb` events in the past tense, stored and logged; precise reasons live here, not on the wire. */
import type { AuditEvent } from "../../store/types.ts";
import type { Gateway } from "../context.ts";

export async function audit(gw: Gateway, type: string, e: Omit<AuditEvent, "type" | "at"> = {}): Promise<void> {
  const event: AuditEvent = { type, at: gw.now(), ...e };
  try {
    await gw.store.appendAudit(event);
  } catch (err) {
    gw.log.error(`audit write failed for ${type}`, err);
  }
}
