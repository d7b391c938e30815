/**
 * The admin API for the audit trail (DESIGN §9): events newest first, filtered by type, client, agent, user, provider
 * and time (`since` inclusive, `until` exclusive), in keyset pages by event id. Events still in the gateway's write
 * queue are flushed first, so what just happened is listed.
 */
import type { AdminAuditEvent } from "../../protocol/admin.ts";
import type { AuditEvent, AuditFilter } from "../../store/types.ts";
import type { Call, Gateway } from "../context.ts";
import { exportAudit } from "../domain/audit-export.ts";
import { AthError } from "../../protocol/index.ts";
import { json } from "../http/response.ts";
import { decodeCursor, encodeCursor, iso, readLimit, readQuery, readTime } from "./query.ts";

const FILTERS = ["type", "client_id", "agent_id", "user_id", "provider_id"] as const;

export async function list({ gw, search }: Call): Promise<Response> {
  return json(await listAudit(gw, search));
}

/**
 * GET /ath/admin/audit/export[?since=T]: the chain as JSONL (DESIGN §20) — the key, then records and checkpoints —
 * streamed page by page; `since` starts it at the last checkpoint signed before T, so it verifies alone.
 */
export async function exportChain({ gw, search }: Call): Promise<Response> {
  const q = readQuery(search, ["since"]);
  if (q.has("limit") || q.has("cursor")) throw new AthError("INVALID_REQUEST", "The export takes only `since`", { field: q.has("limit") ? "limit" : "cursor" });
  const since = readTime(q, "since");
  await gw.auditLog.flush();
  const lines = exportAudit(gw.store, gw.auditChain, since);
  // The first line is read now, so a failing store is an error response, not a cut stream.
  const first = await lines.next();
  const encoder = new TextEncoder();
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      if (!first.done) controller.enqueue(encoder.encode(first.value));
    },
    async pull(controller) {
      try {
        const next = await lines.next();
        if (next.done) controller.close();
        else controller.enqueue(encoder.encode(next.value));
      } catch (err) {
        gw.log.error("audit export failed", err);
        controller.error(err);
      }
    },
  });
  return new Response(body, { headers: { "content-type": "application/x-ndjson", "cache-control": "no-store" } });
}

/** GET /.well-known/ath-audit-key: the public JWK checkpoints are signed with. */
export function publicKey({ gw }: Call): Response {
  return json(gw.auditChain.jwk, 200, { "cache-control": "public, max-age=300" });
}

export async function listAudit(gw: Gateway, search: string) {
  const q = readQuery(search, [...FILTERS, "since", "until"]);
  const limit = readLimit(q);
  const before = decodeCursor(q.get("cursor"), isAuditKey);
  const since = readTime(q, "since");
  const until = readTime(q, "until");
  const filter: AuditFilter = {
    ...Object.fromEntries(FILTERS.filter((f) => q.has(f)).map((f) => [f, q.get(f)!])),
    ...(since !== undefined ? { since } : {}),
    ...(until !== undefined ? { until } : {}),
    ...(before ? { beforeId: before.id } : {}),
    limit: limit + 1,
  };
  await gw.auditLog.flush();
  const rows = await gw.store.listAudit(filter);
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  return {
    events: page.map(view),
    next_cursor: rows.length > limit && last ? encodeCursor({ id: last.id! }) : null,
  };
}

export function view(e: AuditEvent): AdminAuditEvent {
  return {
    id: e.id!,
    type: e.type,
    at: iso(e.at)!,
    client_id: e.client_id ?? null,
    agent_id: e.agent_id ?? null,
    user_id: e.user_id ?? null,
    provider_id: e.provider_id ?? null,
    data: e.data ?? null,
  };
}

// internal

function isAuditKey(v: unknown): v is { id: number } {
  const o = v as { id?: unknown } | null;
  return typeof o === "object" && o !== null && Number.isSafeInteger(o.id) && (o.id as number) > 0 && Object.keys(o).length === 1;
}
