/**
 * The audit chain as the store now holds it, checked against what this gateway verified before (DESIGN §20; issue
 * 35's store-only rewrite): before a checkpoint or an export's closing line is signed, every record from the last
 * verified head (kept outside the store: ops/audit-pin.ts) through the store's head is hashed again and linked again,
 * and every checkpoint row in that span must carry this key's valid signature of the record at its seq. Anyone who
 * can write the store can append records — so can any writer — but cannot rewrite, drop or cut records a gateway has
 * verified, nor swap the audit key, without this walk naming the first seq that changed.
 */
import { chainRecord, checkpointVerifier, hashRecord, type AuditPublicJwk } from "../../protocol/audit-chain.ts";
import type { AuditEvent, AuditHead, Store } from "../../store/types.ts";

/** A verified place in the chain: the record at `seq` hashes to `hash` (seq 0: the empty chain, 64 zeros). */
export interface ChainPoint {
  seq: number;
  hash: string;
}

/** What the walk found: the first seq that is not what was verified, and why. */
export interface ChainTamper {
  seq: number;
  reason: string;
}

/** The head a gateway verified last, and the audit key that was the store's then. */
export interface PinnedHead extends ChainPoint {
  kid: string;
}

/** Where the pinned head is kept, outside the store (ops/audit-pin.ts: a file in the data dir). */
export interface AuditPin {
  /** Where it is kept, for messages. */
  where: string;
  /** The pinned head, or null when none was kept yet; throws when what is kept is not a pinned head. */
  read(): PinnedHead | null;
  /** Replaces it; throws when it cannot be written. */
  write(head: PinnedHead): void;
}

/** Records read per page: ≤ 500 records are hashed between two waits on the store, so the event loop keeps turning. */
const PAGE = 500;

/**
 * Walks the store's chain from `from` (verified before) through `head`; the head it verified, or the first fault.
 * A `from` whose record a sweep deleted continues from the signed anchor the sweep left in its place.
 */
export async function walkChain(store: Store, jwk: AuditPublicJwk, from: ChainPoint, head: AuditHead): Promise<{ ok: true; head: ChainPoint } | { ok: false; tamper: ChainTamper }> {
  const tamper = (seq: number, reason: string) => ({ ok: false as const, tamper: { seq, reason } });
  if (head.seq < from.seq) {
    return tamper(head.seq + 1, `the chain ends at seq ${head.seq}, but seq ${head.seq + 1} to ${from.seq} were verified before: they are gone`);
  }
  const signed = checkpointVerifier(jwk);
  const start = await startingPoint(store, from);
  if ("reason" in start) return { ok: false, tamper: start };
  const checkpoints = await store.listAuditCheckpoints({ afterSeq: start.seq - 1, throughSeq: head.seq });
  let c = 0;
  // Checkpoints up to the record just reached: each this key's, valid, and signing that record's hash.
  const checkThrough = (seq: number, hash: string): ChainTamper | null => {
    for (; c < checkpoints.length && checkpoints[c]!.seq <= seq; c++) {
      const cp = checkpoints[c]!;
      if (cp.kid !== jwk.kid || !signed({ ...cp, time: new Date(cp.time).toISOString() })) return { seq: cp.seq, reason: `the checkpoint at seq ${cp.seq} is not signed by the audit key ${jwk.kid}` };
      if (cp.seq === seq && cp.hash !== hash) return { seq, reason: `the record at seq ${seq} is not the one its checkpoint signed` };
    }
    return null;
  };
  let prev = start.hash;
  let expected = start.seq + 1;
  const atStart = checkThrough(start.seq, start.hash);
  if (atStart) return { ok: false, tamper: atStart };
  while (expected <= head.seq) {
    const page = await store.listAuditChain({ afterSeq: expected - 1, throughSeq: head.seq, limit: PAGE });
    if (page.length === 0) break;
    for (const r of page) {
      if (r.seq !== expected) return tamper(expected, `seq ${expected} is missing from the chain`);
      if (r.prev_hash !== prev) return tamper(expected, `the record at seq ${expected} does not link to the one before it`);
      if (hashOf(r) !== r.hash) return tamper(expected, `the record at seq ${expected} does not hash to its hash (rewritten)`);
      const bad = checkThrough(r.seq, r.hash);
      if (bad) return { ok: false, tamper: bad };
      prev = r.hash;
      expected++;
    }
  }
  if (expected <= head.seq) return tamper(expected, `seq ${expected} to ${head.seq} are missing from the chain`);
  if (prev !== head.hash) return tamper(head.seq, `the chain's head row does not name the record at seq ${head.seq}`);
  return { ok: true, head: { seq: head.seq, hash: head.hash } };
}

/**
 * Whether a sweep may sign its anchor at `at` (a record older than what the walk covers): the record hashes to its
 * hash and the next record links to it. Records between it and the verified head are linked up to that head's hash,
 * so a rewrite among them shows at the next walk or in any export's verification.
 */
export async function anchorHolds(store: Store, at: ChainPoint): Promise<ChainTamper | null> {
  const [r, next] = await store.listAuditChain({ afterSeq: at.seq - 1, throughSeq: at.seq + 1, limit: 2 });
  if (r?.seq !== at.seq || r.hash !== at.hash || hashOf(r) !== r.hash) return { seq: at.seq, reason: `the record at seq ${at.seq} does not hash to its hash (rewritten)` };
  if (next && (next.seq !== at.seq + 1 || next.prev_hash !== at.hash)) return { seq: at.seq + 1, reason: `the record at seq ${at.seq + 1} does not link to the one before it` };
  return null;
}

// internal

/** Where the walk starts: `from` itself (its record must still hash to what was verified), or a sweep's anchor past it. */
async function startingPoint(store: Store, from: ChainPoint): Promise<ChainPoint | ChainTamper> {
  if (from.seq === 0) return missingFrom(store, from);
  const [r] = await store.listAuditChain({ afterSeq: from.seq - 1, throughSeq: from.seq, limit: 1 });
  if (r?.seq === from.seq) {
    return r.hash === from.hash && hashOf(r) === r.hash ? from : { seq: from.seq, reason: `the record at seq ${from.seq} is not the one verified before (rewritten)` };
  }
  return missingFrom(store, from);
}

/** `from`'s record is not there: only a sweep may have deleted it, and then its signed anchor stands at or past it. */
async function missingFrom(store: Store, from: ChainPoint): Promise<ChainPoint | ChainTamper> {
  const first = await store.firstAuditSeq();
  if (first !== null && first <= from.seq) return { seq: from.seq, reason: `the record at seq ${from.seq}, verified before, is gone` };
  const anchorSeq = first === null ? (await store.auditHead()).seq : first - 1;
  if (anchorSeq === 0) return from;
  // its signature and key are checked with the other checkpoints of the walk
  const anchor = await store.lastAuditCheckpoint({ maxSeq: anchorSeq });
  if (anchor?.seq !== anchorSeq) return { seq: Math.max(from.seq, 1), reason: `records up to seq ${anchorSeq} are gone, and no signed checkpoint stands in their place` };
  if (anchor.seq === from.seq && anchor.hash !== from.hash) return { seq: from.seq, reason: `the checkpoint at seq ${from.seq} is not the record verified before` };
  return { seq: anchor.seq, hash: anchor.hash };
}

/** The record's hash as the verifier computes it (protocol/audit-chain.ts), or "" when it cannot be hashed. */
function hashOf(r: AuditEvent): string {
  try {
    return hashRecord(chainRecord({ ...r, seq: r.seq!, prev_hash: r.prev_hash!, data: r.data ?? null }));
  } catch {
    return "";
  }
}
