/**
 * Which wire an upstream MCP server speaks (DESIGN §21): ath asks it `server/discover` (2026-07-28) the first time a
 * client's wire may need bridging — an upstream that answers it with 2026-07-28 among its `supportedVersions` speaks
 * 2026, any other answer (400 for a request without a session, a method-not-found, …) means 2025 only — and keeps the
 * verdict per provider and instance for ten minutes (an upgraded upstream is noticed within that). Whether a 2026
 * upstream also serves 2025 is learnt where it matters: from its answer to a client's `initialize` (held.ts).
 */
import { MCP_WIRE } from "../../protocol/mcp-front-door.ts";
import type { Gateway } from "../context.ts";
import type { Door } from "./forward.ts";
import { call2026 } from "./upstream-calls.ts";

export type UpstreamWire = "2026" | "2025";

/** How long a verdict is kept. */
export const WIRE_TTL_MS = 10 * 60 * 1000;

/** The upstream's wire: the kept verdict, else asked for now. */
export async function upstreamWire(door: Door): Promise<UpstreamWire> {
  const { gw, record } = door;
  const kept = verdicts(gw).get(record.provider_id);
  if (kept && kept.until > gw.now()) return kept.wire;
  const { answer } = await call2026(door, "server/discover");
  const versions = answer && "result" in answer ? answer.result.supportedVersions : undefined;
  const wire: UpstreamWire = Array.isArray(versions) && versions.includes(MCP_WIRE.stateless) ? "2026" : "2025";
  rememberWire(gw, record.provider_id, wire);
  return wire;
}

/** Records a verdict learnt from an answer (an upstream that refused a 2025 `initialize` speaks 2026 only). */
export function rememberWire(gw: Gateway, providerId: string, wire: UpstreamWire): void {
  verdicts(gw).set(providerId, { wire, until: gw.now() + WIRE_TTL_MS });
}

/** Whether the upstream refused a 2025 `initialize` lately (it speaks 2026 only): ath then holds 2025 sessions itself. */
export function refusesStateful(gw: Gateway, providerId: string): boolean {
  const at = refused(gw).get(providerId);
  return at !== undefined && at > gw.now();
}

/** Records that the upstream refused a 2025 `initialize` (answered -32022). */
export function rememberRefusesStateful(gw: Gateway, providerId: string): void {
  refused(gw).set(providerId, gw.now() + WIRE_TTL_MS);
}

// internal

const refusals = new WeakMap<Gateway, Map<string, number>>();

function refused(gw: Gateway): Map<string, number> {
  let m = refusals.get(gw);
  if (!m) refusals.set(gw, (m = new Map()));
  return m;
}

const byGateway = new WeakMap<Gateway, Map<string, { wire: UpstreamWire; until: number }>>();

function verdicts(gw: Gateway): Map<string, { wire: UpstreamWire; until: number }> {
  let m = byGateway.get(gw);
  if (!m) byGateway.set(gw, (m = new Map()));
  return m;
}
