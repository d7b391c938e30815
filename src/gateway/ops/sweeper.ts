/** The sweeper: expired and long-revoked rows are deleted on a timer, so the store does not grow without bound. */
import type { Gateway } from "../context.ts";

export interface SweepSchedule {
  intervalMs: number;
  /** Revoked/expired tokens and dead grants are kept this long before they are deleted. */
  retentionMs: number;
  auditRetentionMs: number;
}

/** Starts sweeping every `intervalMs` (the timer does not keep the process alive); returns the stop function. */
export function startSweeper(gw: Gateway, s: SweepSchedule): () => void {
  const timer = setInterval(() => {
    gw.store.sweep(gw.now(), s.retentionMs, s.auditRetentionMs).catch((err) => gw.log.error("sweep failed", err));
  }, s.intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
