/** The sweeper: expired and long-revoked rows are deleted on a timer, so the store does not grow without bound. */
import type { Gateway } from "../context.ts";
import { anchorAuditSweep } from "../domain/audit-chain.ts";

export interface SweepSchedule {
  intervalMs: number;
  /** Revoked/expired tokens and dead grants are kept this long before they are deleted. */
  retentionMs: number;
  auditRetentionMs: number;
}

/** Starts sweeping every `intervalMs` (the timer does not keep the process alive); returns the stop function. */
export function startSweeper(gw: Gateway, s: SweepSchedule): () => void {
  const timer = setInterval(() => {
    sweepOnce(gw, s).catch((err) => gw.log.error("sweep failed", err));
  }, s.intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}

/** One sweep: audit records go only past a signed anchor (DESIGN §20), signed here first. */
export async function sweepOnce(gw: Gateway, s: Omit<SweepSchedule, "intervalMs">) {
  const now = gw.now();
  await gw.auditLog.flush();
  await anchorAuditSweep(gw.store, gw.auditChain, now - s.auditRetentionMs);
  return gw.store.sweep(now, s.retentionMs, s.auditRetentionMs);
}
