/**
 * GET /metrics (Prometheus text format 0.0.4, behind the `metrics` guard) and GET /ready (200 when the store answers,
 * else 503) — DESIGN §10. `/health` (discovery.ts) stays a liveness check that touches nothing.
 */
import { AthError } from "../../protocol/index.ts";
import type { Call } from "../context.ts";
import { json } from "../http/response.ts";
import { storeAnswers } from "../ops/readiness.ts";

/** How long /ready waits for the store. */
const READY_TIMEOUT_MS = 2_000;

export function metrics({ gw }: Call): Response {
  return new Response(gw.metrics.render(), {
    headers: { "content-type": "text/plain; version=0.0.4; charset=utf-8", "cache-control": "no-store" },
  });
}

export async function ready({ gw }: Call): Promise<Response> {
  if (!(await storeAnswers(gw, READY_TIMEOUT_MS))) throw new AthError("NOT_READY");
  // Audit events pile up past the queue's bound (the store took none for long): drain traffic rather than drop them.
  if (gw.auditLog.overloaded()) throw new AthError("NOT_READY", `${gw.auditLog.pending()} audit events wait for the store`, { reason: "audit_backlog" });
  return json({ status: "ready" });
}
