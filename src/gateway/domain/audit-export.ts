/**
 * The audit export (DESIGN §20): JSONL — the key first, then records and checkpoints in seq order, ending with the
 * export's closing line, the head it was taken at signed for it (domain/audit-chain.ts `closeExport`), so an export
 * cut anywhere, right after a checkpoint too, is caught by the verifier (agent/audit-verify.ts).
 */
import { chainRecord, type CheckpointLine, type KeyLine } from "../../protocol/audit-chain.ts";
import type { AuditCheckpoint, AuditEvent, Store } from "../../store/types.ts";
import type { AuditChain } from "../context.ts";

/** Records read per page while exporting. */
const EXPORT_PAGE = 1_000;

/**
 * The export's lines, lazily: the key; the checkpoint it starts from (none when it starts at seq 1) — with `since`,
 * the last one signed before that time, else the anchor of the oldest record kept; then every record and checkpoint up
 * to the head, verified and signed now; then the closing line over that head. The head is verified and signed before
 * the first line is given, so a refusal (a rewritten chain) is an error answer, not a cut stream.
 */
export async function* exportAudit(store: Store, chain: AuditChain, since?: number): AsyncGenerator<string> {
  const line = (o: unknown) => `${JSON.stringify(o)}\n`;
  const { head, end } = await chain.closeExport();
  yield line({ type: "key", jwk: chain.jwk } satisfies KeyLine);
  if (head) yield* body(store, head, since);
  yield line(end);
}

export function recordLine(r: AuditEvent) {
  return { ...chainRecord({ ...r, seq: r.seq!, prev_hash: r.prev_hash! }), hash: r.hash! };
}

export function checkpointLine(c: AuditCheckpoint): CheckpointLine {
  return { type: "checkpoint", seq: c.seq, hash: c.hash, time: new Date(c.time).toISOString(), signature: c.signature };
}

// internal

async function* body(store: Store, end: AuditCheckpoint, since: number | undefined): AsyncGenerator<string> {
  const line = (o: unknown) => `${JSON.stringify(o)}\n`;
  const first = await store.firstAuditSeq();
  let start = first === null ? end.seq : first - 1;
  if (since !== undefined) {
    const before = await store.lastAuditCheckpoint({ beforeTime: since, maxSeq: end.seq });
    if (before && before.seq > start) start = before.seq;
  }
  if (start > 0) {
    const anchor = await store.lastAuditCheckpoint({ maxSeq: start });
    if (anchor) yield line(checkpointLine(anchor));
  }
  const checkpoints = await store.listAuditCheckpoints({ afterSeq: start, throughSeq: end.seq });
  let c = 0;
  for (let after = start; after < end.seq; ) {
    const page = await store.listAuditChain({ afterSeq: after, throughSeq: end.seq, limit: EXPORT_PAGE });
    if (page.length === 0) break;
    let out = "";
    for (const r of page) {
      out += line(recordLine(r));
      while (c < checkpoints.length && checkpoints[c]!.seq <= r.seq!) out += line(checkpointLine(checkpoints[c++]!));
    }
    yield out;
    after = page.at(-1)!.seq!;
  }
  while (c < checkpoints.length) yield line(checkpointLine(checkpoints[c++]!));
}

