/**
 * The audit trail: append and read, newest first — and the hash chain over it (DESIGN §20). Every append runs in one
 * transaction that locks the chain's head row (PostgreSQL `FOR UPDATE`; SQLite's `BEGIN IMMEDIATE` already holds the
 * only write lock), gives each event the next `seq`, the previous record's hash and its own, and moves the head: two
 * instances appending at once take turns, so the chain never forks.
 */
import { chainRecord, hashChainedText, hashRecord } from "../../protocol/audit-chain.ts";
import { canonicalize, canonicalizePlain } from "../../protocol/jcs.ts";
import type { Row } from "../rows.ts";
import { toAudit } from "../rows.ts";
import type { AuditCheckpoint, AuditEvent, AuditHead, Store } from "../types.ts";
import { type Driver, one } from "./driver.ts";

const AUDIT_LIMIT_DEFAULT = 100;
const AUDIT_LIMIT_MAX = 1000;
/** Records chained per statement when the backlog of pre-chain rows is chained. */
const BACKLOG_BATCH = 500;
/** Written batch ids are kept this long (ms), and pruned by one batch in BATCH_PRUNE_CHANCE. */
const BATCH_KEEP_MS = 86_400_000;
const BATCH_PRUNE_CHANCE = 0.01;

const COLUMNS = ["type", "at", "client_id", "agent_id", "provider_id", "user_id", "data", "seq", "prev_hash", "hash"] as const;

export function auditQueries(db: Driver): Pick<
  Store,
  | "appendAudit" | "appendAuditBatch" | "listAudit" | "chainAuditBacklog" | "auditHead" | "listAuditChain" | "addAuditCheckpoint" | "listAuditCheckpoints"
  | "lastAuditCheckpoint" | "firstAuditSeq" | "auditSweepPoint"
> {
  const lock = db.kind === "postgres" ? " FOR UPDATE" : "";
  const lockHead = (tx: Driver) => one(tx, `SELECT seq, hash FROM audit_head WHERE id = 1${lock}`, [], toHead).then((h) => h!);
  const moveHead = (tx: Driver, h: AuditHead) => tx.run("UPDATE audit_head SET seq = ?, hash = ? WHERE id = 1", [h.seq, h.hash]);

  /** Appends `events` to the chain in one transaction; false when `batchId` was written before (nothing is). */
  async function append(batchId: string | null, events: AuditEvent[]): Promise<boolean> {
    if (events.length === 0) return true;
    return db.transaction(async (tx) => {
      const head = await lockHead(tx);
      if (batchId !== null) {
        const now = Date.now();
        if ((await tx.run("INSERT INTO audit_batches (batch_id, at) VALUES (?, ?) ON CONFLICT (batch_id) DO NOTHING", [batchId, now])) === 0) return false;
        // A batch is retried within minutes at most: ids older than a day are dropped, now and then (indexed).
        if (Math.random() < BATCH_PRUNE_CHANCE) await tx.run("DELETE FROM audit_batches WHERE at < ?", [now - BATCH_KEEP_MS]);
      }
      const values: unknown[] = [];
      for (const e of events) {
        // What is stored is what is hashed: data's canonical JSON text, which the record's text embeds as it is.
        const dataText = canonicalData(e.data);
        const seq = head.seq + 1;
        const prev = head.hash;
        const hash = hashChainedText(e, seq, prev, dataText);
        head.seq = seq;
        head.hash = hash;
        values.push(e.type, e.at, e.client_id ?? null, e.agent_id ?? null, e.provider_id ?? null, e.user_id ?? null, dataText, seq, prev, hash);
      }
      // One statement per batch (the gateway's audit queue writes them in batches).
      await tx.run(`INSERT INTO audit (${COLUMNS.join(", ")}) VALUES ${events.map(() => `(${COLUMNS.map(() => "?").join(", ")})`).join(", ")}`, values);
      await moveHead(tx, head);
      return true;
    });
  }

  return {
    async appendAudit(...events) {
      await append(null, events);
    },
    appendAuditBatch: (batchId, events) => append(batchId, events),
    async chainAuditBacklog() {
      let total = 0;
      for (;;) {
        const n = await db.transaction(async (tx) => {
          const head = await lockHead(tx);
          const rows = await tx.all(`SELECT * FROM audit WHERE seq IS NULL ORDER BY id LIMIT ${BACKLOG_BATCH}`);
          for (const r of rows) {
            const [seq, prev, hash] = chain(head, toAudit(r));
            await tx.run("UPDATE audit SET seq = ?, prev_hash = ?, hash = ? WHERE id = ?", [seq, prev, hash, r.id]);
          }
          if (rows.length > 0) await moveHead(tx, head);
          return rows.length;
        });
        total += n;
        if (n < BACKLOG_BATCH) return total;
      }
    },
    async auditHead() {
      return (await one(db, "SELECT seq, hash FROM audit_head WHERE id = 1", [], toHead))!;
    },
    async listAuditChain(o) {
      const through = o.throughSeq === undefined ? "" : " AND seq <= ?";
      const rows = await db.all(`SELECT * FROM audit WHERE seq > ?${through} ORDER BY seq LIMIT ?`, [
        o.afterSeq, ...(o.throughSeq === undefined ? [] : [o.throughSeq]), o.limit,
      ]);
      return rows.map(toAudit);
    },
    async addAuditCheckpoint(c) {
      return (
        (await db.run("INSERT INTO audit_checkpoints (seq, hash, time, signature, kid) VALUES (?, ?, ?, ?, ?) ON CONFLICT (seq) DO NOTHING", [
          c.seq, c.hash, c.time, c.signature, c.kid,
        ])) === 1
      );
    },
    async listAuditCheckpoints(o) {
      const rows = await db.all("SELECT * FROM audit_checkpoints WHERE seq > ? AND seq <= ? ORDER BY seq", [o.afterSeq, o.throughSeq]);
      return rows.map(toCheckpoint);
    },
    async lastAuditCheckpoint(o) {
      const where: string[] = [];
      const params: unknown[] = [];
      if (o.beforeTime !== undefined) (where.push("time < ?"), params.push(o.beforeTime));
      if (o.maxSeq !== undefined) (where.push("seq <= ?"), params.push(o.maxSeq));
      const clause = where.length ? `WHERE ${where.join(" AND ")}` : "";
      return one(db, `SELECT * FROM audit_checkpoints ${clause} ORDER BY seq DESC LIMIT 1`, params, toCheckpoint);
    },
    async firstAuditSeq() {
      const [r] = await db.all("SELECT MIN(seq) AS s FROM audit");
      return r?.s == null ? null : Number(r.s);
    },
    async auditSweepPoint(cutoff) {
      const [r] = await db.all("SELECT MIN(seq) AS s FROM audit WHERE seq IS NOT NULL AND at > ?", [cutoff]);
      const end = r?.s == null ? (await one(db, "SELECT seq, hash FROM audit_head WHERE id = 1", [], toHead))!.seq : Number(r.s) - 1;
      if (end < 1) return null;
      return one(db, "SELECT seq, hash FROM audit WHERE seq = ?", [end], toHead);
    },
    async listAudit(opts = {}) {
      const limit = Math.min(Math.max(Math.trunc(opts.limit ?? AUDIT_LIMIT_DEFAULT), 1), AUDIT_LIMIT_MAX);
      const where: { sql: string; param: unknown }[] = [];
      for (const c of ["type", "client_id", "agent_id", "user_id", "provider_id"] as const) {
        if (opts[c] !== undefined) where.push({ sql: `${c} = ?`, param: opts[c] });
      }
      if (opts.since !== undefined) where.push({ sql: "at >= ?", param: opts.since });
      if (opts.until !== undefined) where.push({ sql: "at < ?", param: opts.until });
      if (opts.beforeId !== undefined) where.push({ sql: "id < ?", param: opts.beforeId });
      const clause = where.length === 0 ? "" : `WHERE ${where.map((w) => w.sql).join(" AND ")}`;
      const rows = await db.all(`SELECT * FROM audit ${clause} ORDER BY id DESC LIMIT ?`, [...where.map((w) => w.param), limit]);
      return rows.map(toAudit);
    },
  };
}

// internal

/**
 * An event's data as the chain hashes and the store keeps it: the JCS text of its JSON form (undefined members
 * dropped, dates as strings), null for none. Plain data is canonicalized directly; anything else goes through
 * JSON.stringify first, as it always did.
 */
export function canonicalData(data: Record<string, unknown> | null | undefined): string | null {
  if (data === undefined || data === null) return null;
  try {
    return canonicalizePlain(data);
  } catch {
    const text = JSON.stringify(data);
    return text === undefined ? null : canonicalize(JSON.parse(text));
  }
}

/** The next link after `head` (which it moves): [seq, prev_hash, hash]. */
function chain(head: AuditHead, e: AuditEvent): [number, string, string] {
  const seq = head.seq + 1;
  const prev = head.hash;
  const hash = hashRecord(chainRecord({ ...e, seq, prev_hash: prev, data: e.data ?? null }));
  head.seq = seq;
  head.hash = hash;
  return [seq, prev, hash];
}

function toHead(r: Row): AuditHead {
  return { seq: Number(r.seq), hash: String(r.hash) };
}

function toCheckpoint(r: Row): AuditCheckpoint {
  return { seq: Number(r.seq), hash: String(r.hash), time: Number(r.time), signature: String(r.signature), kid: String(r.kid) };
}
