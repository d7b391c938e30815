/**
 * The audit chain's gateway side (DESIGN §20): the Ed25519 audit key (generated once per store, sealed at rest in
 * meta), signed checkpoints — every CHECKPOINT_RECORDS records this instance wrote or every CHECKPOINT_MS, whichever
 * comes first, and on demand (an export, the anchor of a sweep) — and the export: JSONL, the key first, then records
 * and checkpoints in seq order, ending with a checkpoint of the head, so a dropped tail is caught too.
 * The record shape and hashing live in protocol/audit-chain.ts, shared with the offline verifier.
 */
import { createPrivateKey, generateKeyPairSync, sign, type KeyObject } from "node:crypto";
import {
  auditKeyId, chainRecord, checkpointMessage, type AuditPublicJwk, type CheckpointLine, type KeyLine,
} from "../../protocol/audit-chain.ts";

import type { AuditCheckpoint, AuditEvent, Store } from "../../store/types.ts";
import type { AuditChain, Logger, Sealer } from "../context.ts";

export const CHECKPOINT_RECORDS = 1_000;
export const CHECKPOINT_MS = 60_000;
/** Records read per page while exporting. */
const EXPORT_PAGE = 1_000;

const KEY_META = "audit_key";
const KEY_AAD = "meta:audit_key";


export async function openAuditChain(store: Store, sealer: Sealer, now: () => number, log: Logger): Promise<AuditChain> {
  await store.chainAuditBacklog();
  const { privateKey, jwk } = await loadOrCreateKey(store, sealer);
  let sinceLast = 0;
  let running: Promise<unknown> = Promise.resolve();

  async function add(seq: number, hash: string): Promise<AuditCheckpoint> {
    const time = now();
    const body = { seq, hash, time: new Date(time).toISOString() };
    const c: AuditCheckpoint = { seq, hash, time, signature: sign(null, checkpointMessage(body), privateKey).toString("base64url"), kid: jwk.kid };
    await store.addAuditCheckpoint(c);
    return c;
  }
  async function checkpoint(): Promise<AuditCheckpoint | null> {
    sinceLast = 0;
    const head = await store.auditHead();
    const last = await store.lastAuditCheckpoint({});
    if (head.seq === 0) return last;
    if (last && last.seq >= head.seq) return last;
    await add(head.seq, head.hash);
    // Another instance may have signed the same seq a moment earlier: its row stands, and is as good.
    return store.lastAuditCheckpoint({ maxSeq: head.seq });
  }
  const serially = <T>(fn: () => Promise<T>): Promise<T> => {
    const p = running.then(fn, fn);
    running = p.catch(() => undefined);
    return p;
  };
  const timer = setInterval(() => {
    serially(checkpoint).catch((err) => log.error("audit checkpoint failed", err));
  }, CHECKPOINT_MS);
  timer.unref();

  return {
    jwk,
    checkpoint: () => serially(checkpoint),
    checkpointAt: async (seq, hash) => {
      const at = await store.lastAuditCheckpoint({ maxSeq: seq });
      if (at?.seq !== seq) await add(seq, hash);
    },
    written(n) {
      sinceLast += n;
      if (sinceLast >= CHECKPOINT_RECORDS) serially(checkpoint).catch((err) => log.error("audit checkpoint failed", err));
    },
    stop: () => clearInterval(timer),
  };
}

/**
 * Before a sweep deletes old records: a signed checkpoint at the last record it may delete, the anchor the rest of
 * the chain verifies from.
 */
export async function anchorAuditSweep(store: Store, chain: AuditChain, cutoff: number): Promise<void> {
  const point = await store.auditSweepPoint(cutoff);
  if (point) await chain.checkpointAt(point.seq, point.hash);
}

/**
 * The export's lines, lazily: the key; the checkpoint it starts from (none when it starts at seq 1) — with `since`,
 * the last one signed before that time, else the anchor of the oldest record kept; then every record and checkpoint up
 * to a checkpoint of the head signed now.
 */
export async function* exportAudit(store: Store, chain: AuditChain, since?: number): AsyncGenerator<string> {
  const line = (o: unknown) => `${JSON.stringify(o)}\n`;
  yield line({ type: "key", jwk: chain.jwk } satisfies KeyLine);
  const end = await chain.checkpoint();
  if (!end) return;
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

export function recordLine(r: AuditEvent) {
  return { ...chainRecord({ ...r, seq: r.seq!, prev_hash: r.prev_hash! }), hash: r.hash! };
}

export function checkpointLine(c: AuditCheckpoint): CheckpointLine {
  return { type: "checkpoint", seq: c.seq, hash: c.hash, time: new Date(c.time).toISOString(), signature: c.signature };
}

// internal

async function loadOrCreateKey(store: Store, sealer: Sealer): Promise<{ privateKey: KeyObject; jwk: AuditPublicJwk }> {
  let sealed = await store.getMeta(KEY_META);
  if (sealed === null) {
    const { privateKey } = generateKeyPairSync("ed25519");
    const { d, x } = privateKey.export({ format: "jwk" });
    // Instances starting together: the first one's key is everyone's.
    sealed = await store.setMetaIfAbsent(KEY_META, await sealer.seal(JSON.stringify({ d, x }), KEY_AAD));
  }
  let opened: string;
  try {
    opened = await sealer.open(sealed, KEY_AAD);
  } catch {
    throw new Error("the audit key in the store was sealed under another master key: every instance on one store needs the same ATH_MASTER_KEY");
  }
  const { d, x } = JSON.parse(opened) as { d: string; x: string };
  const privateKey = createPrivateKey({ key: { kty: "OKP", crv: "Ed25519", d, x }, format: "jwk" });
  return { privateKey, jwk: { kty: "OKP", crv: "Ed25519", x, kid: auditKeyId(x) } };
}
