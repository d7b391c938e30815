/**
 * The audit chain's gateway side (DESIGN §20): the Ed25519 audit key (generated once per store, sealed at rest in
 * meta), signed checkpoints — every CHECKPOINT_RECORDS records this instance wrote or every CHECKPOINT_MS, whichever
 * comes first, and on demand (an export, the anchor of a sweep) — and an export's closing line (domain/audit-export.ts).
 *
 * Nothing is signed before the chain is walked again from the head this gateway verified last, kept outside the store
 * (domain/audit-guard.ts, ops/audit-pin.ts): a chain rewritten in the store is logged, counted, recorded, and never
 * signed — the gateway answers exports and sweeps with 503 until an operator has looked.
 * The record shape and hashing live in protocol/audit-chain.ts, shared with the offline verifier.
 */
import { createPrivateKey, generateKeyPairSync, sign, type KeyObject } from "node:crypto";
import { AthError } from "../../protocol/index.ts";
import { auditKeyId, checkpointMessage, endMessage, ZERO_HASH, type AuditPublicJwk, type EndLine } from "../../protocol/audit-chain.ts";

import type { AuditCheckpoint, Store } from "../../store/types.ts";
import type { AuditChain, Logger, Sealer } from "../context.ts";
import { anchorHolds, walkChain, type AuditPin, type ChainPoint, type ChainTamper } from "./audit-guard.ts";

export const CHECKPOINT_RECORDS = 1_000;
export const CHECKPOINT_MS = 60_000;

const KEY_META = "audit_key";
const KEY_AAD = "meta:audit_key";

export interface AuditChainDeps {
  store: Store;
  sealer: Sealer;
  now: () => number;
  log: Logger;
  /** Where the last verified head is kept, outside the store. */
  pin: AuditPin;
  /** Told once when the chain is found rewritten (app.ts: the `audit.tamper_detected` record and its counter). */
  onTamper?: (t: ChainTamper) => void;
}

export async function openAuditChain({ store, sealer, now, log, pin, onTamper }: AuditChainDeps): Promise<AuditChain> {
  await store.chainAuditBacklog();
  const { privateKey, jwk } = await loadOrCreateKey(store, sealer);
  const signBody = (message: (c: { seq: number; hash: string; time: string }) => Buffer, seq: number, hash: string) => {
    const time = new Date(now()).toISOString();
    return { seq, hash, time, signature: sign(null, message({ seq, hash, time }), privateKey).toString("base64url") };
  };
  let sinceLast = 0;
  let running: Promise<unknown> = Promise.resolve();

  // What this gateway verified last: the pinned head, or — the first time this data dir serves this store — the
  // newest checkpoint the store holds (its signature is checked by the first walk), else the chain from seq 1.
  const pinned = pin.read();
  let verified: ChainPoint = pinned ?? (await store.lastAuditCheckpoint({})) ?? { seq: 0, hash: ZERO_HASH };
  let tampered: ChainTamper | null =
    pinned && pinned.kid !== jwk.kid
      ? { seq: pinned.seq, reason: `the store's audit key is ${jwk.kid}, not ${pinned.kid}, the key this gateway signed with before (replaced)` }
      : null;
  let pinFailed = false;
  let pinKept = false;

  const refusal = (t: ChainTamper) =>
    new AthError("NOT_READY", `The audit chain in the store is not the one this gateway verified (seq ${t.seq}): it signs nothing until an operator checks the store`, {
      reason: "audit_chain_tampered",
      seq: t.seq,
    });
  const loud = (t: ChainTamper) =>
    log.error(
      `AUDIT CHAIN REWRITTEN IN THE STORE at seq ${t.seq}: ${t.reason}. No checkpoint is signed and no export closed until an operator checks the store; to accept the store's chain as it now is, remove ${pin.where} and restart (docs/audit.md)`,
    );
  const found = (t: ChainTamper) => {
    tampered = t;
    loud(t);
    onTamper?.(t);
  };
  /** Walks the chain from what was verified through the store's head; the head, now verified — or the refusal. */
  async function guard(): Promise<ChainPoint> {
    if (tampered) {
      loud(tampered);
      throw refusal(tampered);
    }
    const r = await walkChain(store, jwk, verified, await store.auditHead());
    if (!r.ok) {
      found(r.tamper);
      throw refusal(r.tamper);
    }
    if (r.head.seq !== verified.seq || !pinKept) keep(r.head);
    return verified;
  }
  function keep(head: ChainPoint): void {
    verified = head;
    try {
      pin.write({ kid: jwk.kid, seq: head.seq, hash: head.hash });
      pinKept = true;
    } catch (err) {
      if (!pinFailed) log.warn(`the audit chain's verified head cannot be kept in ${pin.where}: a rewrite of the store after a restart is caught only by verifying an export`, { error: err instanceof Error ? err.message : String(err) });
      pinFailed = true;
    }
  }

  async function add(seq: number, hash: string): Promise<AuditCheckpoint> {
    const body = signBody(checkpointMessage, seq, hash);
    const c: AuditCheckpoint = { seq, hash, time: Date.parse(body.time), signature: body.signature, kid: jwk.kid };
    await store.addAuditCheckpoint(c);
    return c;
  }
  async function checkpoint(): Promise<AuditCheckpoint | null> {
    sinceLast = 0;
    const head = await guard();
    if (head.seq === 0) return null;
    const at = await store.lastAuditCheckpoint({ maxSeq: head.seq });
    if (at?.seq === head.seq) return at;
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
    serially(checkpoint).catch((err) => tampered === null && log.error("audit checkpoint failed", err));
  }, CHECKPOINT_MS);
  timer.unref();

  if (tampered) found(tampered);
  else await serially(guard).catch(() => undefined); // at start: a rewrite while the gateway was down is named now

  return {
    jwk,
    checkpoint: () => serially(checkpoint),
    closeExport: () =>
      serially(async () => {
        const head = await checkpoint();
        const at = head ?? { seq: 0, hash: ZERO_HASH };
        return { head, end: { type: "end", ...signBody(endMessage, at.seq, at.hash) } satisfies EndLine };
      }),
    checkpointAt: (seq, hash) =>
      serially(async () => {
        await guard();
        const at = await store.lastAuditCheckpoint({ maxSeq: seq });
        if (at?.seq === seq) return;
        const bad = await anchorHolds(store, { seq, hash });
        if (bad) {
          found(bad);
          throw refusal(bad);
        }
        await add(seq, hash);
      }),
    written(n) {
      sinceLast += n;
      if (sinceLast >= CHECKPOINT_RECORDS) serially(checkpoint).catch((err) => tampered === null && log.error("audit checkpoint failed", err));
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
