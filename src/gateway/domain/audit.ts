/** Audit trail: `noun.verb` events in the past tense, stored and logged; precise reasons live here, not on the wire. */
import type { AuditEvent, TokenRecord } from "../../store/types.ts";
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
 * or a header — plus, when a person's approval was required, the request's digest (the one the 403 named).
 *
 * The calls of one token within one audit batch (≤ 50 ms, ≤ MAX_GROUP calls) are one `proxy.call` record, whose `at`
 * is the first call's time and whose `data.calls` lists each request line seen — method, path, status (and digest) —
 * once, with `ms`: every call of it as milliseconds after the record's `at`, in the order answered (docs/audit.md).
 * A token repeating one request costs the chain ≈ 2 bytes a call, not a row, a hash or 80 bytes of its own: what the
 * record's text costs to write, hash, store and checkpoint grows with its length (the ≥ 0.95× bench,
 * scripts/bench/audit-wrk.ts).
 */
export function auditProxyCall(gw: Gateway, token: Grantee, c: CallFacts): void {
  // keyed by the token record itself (the cache hands out one object per token): no key string per call
  gw.auditLog.group(token, { token, at: gw.now(), call: c }, openCalls, addCall);
}

/**
 * A delegated token's chain as its records name it (DESIGN §23): `{ act: [agent ids, nearest first] }`, or nothing for
 * a token a person granted directly. Every record made for a token's call carries it — `proxy.call`, `approval.*`,
 * `budget.exhausted` — so an auditor reads who handed the access down without joining tables.
 */
export function actOf(token: Pick<TokenRecord, "delegation"> | null | undefined): { act?: string[] } {
  return token?.delegation ? { act: token.delegation.chain.map((l) => l.agent_id) } : {};
}

// internal

/** One request line of a `proxy.call` record; members in canonical (RFC 8785) order, so the record's JCS text is one JSON.stringify (protocol/jcs.ts). */
interface CallLine {
  method: string;
  ms: number[];
  path: string;
  request_digest?: string;
  status: number;
}

/** Whose call it was: the token's ids, which the record carries (and a delegated token's chain, DESIGN §23). */
type Grantee = Pick<TokenRecord, "client_id" | "agent_id" | "user_id" | "provider_id" | "delegation">;

/** What the record keeps of a call besides its time. */
interface CallFacts {
  method: string;
  path: string;
  status: number;
  request_digest?: string;
}

interface ProxiedCall {
  token: Grantee;
  at: number;
  call: CallFacts;
}

/** How many of a record's newest lines a call is matched against: a call unlike all of them starts a line (so a line may repeat). */
const MATCH_LINES = 8;

function openCalls({ token, at }: ProxiedCall): AuditEvent {
  return {
    type: "proxy.call", at, client_id: token.client_id, agent_id: token.agent_id, user_id: token.user_id, provider_id: token.provider_id,
    // a delegated token's record names the agents it came through, nearest first (members in canonical order)
    data: { ...actOf(token), calls: [] as CallLine[] },
  };
}

function addCall(event: AuditEvent, { at, call: c }: ProxiedCall): void {
  const lines = (event.data as { calls: CallLine[] }).calls;
  const ms = at - event.at;
  for (let i = lines.length - 1; i >= 0 && i >= lines.length - MATCH_LINES; i--) {
    const l = lines[i]!;
    if (l.status === c.status && l.path === c.path && l.method === c.method && l.request_digest === c.request_digest) {
      l.ms.push(ms);
      return;
    }
  }
  lines.push(
    c.request_digest === undefined
      ? { method: c.method, ms: [ms], path: c.path, status: c.status }
      : { method: c.method, ms: [ms], path: c.path, request_digest: c.request_digest, status: c.status },
  );
}
