/**
 * What someone with access to the store alone — no master key, no audit key — can do to the audit chain (issue 35):
 * rewrite a record and re-chain every record after it with correct hashes, delete the signed checkpoints, cut the tail
 * and move the head row to match. Written against the tables directly, with the hashing the gateway itself uses, on
 * SQLite (bun:sqlite) or PostgreSQL (Bun SQL, in a schema).
 */
import { Database } from "bun:sqlite";
import { SQL } from "bun";
import { hashChainedText, ZERO_HASH } from "../../src/protocol/audit-chain.ts";
import { canonicalize } from "../../src/protocol/jcs.ts";

/** A connection to the store's tables: `?` placeholders. */
export interface Tables {
  all(sql: string, params?: unknown[]): Promise<Record<string, any>[]>;
  run(sql: string, params?: unknown[]): Promise<void>;
  close(): Promise<void>;
}

export function sqliteTables(path: string): Tables {
  const db = new Database(path);
  return {
    all: async (sql, params = []) => db.query(sql).all(...(params as never[])) as Record<string, any>[],
    run: async (sql, params = []) => void db.query(sql).run(...(params as never[])),
    close: async () => db.close(),
  };
}

export function postgresTables(url: string, schema: string): Tables {
  const sql = new SQL(url, { max: 1 });
  const text = (q: string) => {
    let i = 0;
    return q.replace(/\?/g, () => `$${++i}`);
  };
  const ready = sql.unsafe(`SET search_path TO "${schema}"`);
  return {
    all: async (q, params = []) => (await ready, (await sql.unsafe(text(q), params as never[])) as Record<string, any>[]),
    run: async (q, params = []) => void (await ready, await sql.unsafe(text(q), params as never[])),
    close: () => sql.close(),
  };
}

export interface Forgery {
  /** The record to rewrite, and its new data (every record after it is re-chained). */
  rewrite?: { seq: number; data: Record<string, unknown> };
  /** Records cut from the tail. */
  cutTail?: number;
  /** Delete every signed checkpoint. */
  dropCheckpoints?: boolean;
}

/** Applies `f`; the chain left behind links and hashes correctly record by record. Returns its head. */
export async function forgeChain(t: Tables, f: Forgery): Promise<{ seq: number; hash: string }> {
  if (f.dropCheckpoints) await t.run("DELETE FROM audit_checkpoints");
  const [head] = await t.all("SELECT seq, hash FROM audit_head WHERE id = 1");
  let last = Number(head!.seq);
  if (f.cutTail) {
    last -= f.cutTail;
    await t.run("DELETE FROM audit WHERE seq > ?", [last]);
  }
  const rows = await t.all("SELECT * FROM audit WHERE seq IS NOT NULL ORDER BY seq");
  let prev = ZERO_HASH;
  let hash = ZERO_HASH;
  for (const r of rows) {
    const seq = Number(r.seq);
    let data: string | null = r.data === null ? null : String(r.data);
    if (f.rewrite && seq === f.rewrite.seq) data = canonicalize(f.rewrite.data);
    if (f.rewrite && seq >= f.rewrite.seq) {
      const e = { type: String(r.type), at: Number(r.at), client_id: r.client_id, agent_id: r.agent_id, user_id: r.user_id, provider_id: r.provider_id };
      hash = hashChainedText(e, seq, prev, data);
      await t.run("UPDATE audit SET data = ?, prev_hash = ?, hash = ? WHERE seq = ?", [data, prev, hash, seq]);
    } else hash = String(r.hash);
    prev = hash;
  }
  await t.run("UPDATE audit_head SET seq = ?, hash = ? WHERE id = 1", [last, hash]);
  return { seq: last, hash };
}

/** The export a forger can write from the store alone: the key line (public), then the records as the store holds them. */
export async function forgedExport(t: Tables, keyLine: string): Promise<string> {
  const rows = await t.all("SELECT * FROM audit WHERE seq IS NOT NULL ORDER BY seq");
  const lines = rows.map((r) =>
    JSON.stringify({
      seq: Number(r.seq), prev_hash: r.prev_hash, type: r.type, at: new Date(Number(r.at)).toISOString(), client_id: r.client_id ?? null,
      agent_id: r.agent_id ?? null, user_id: r.user_id ?? null, provider_id: r.provider_id ?? null, data: r.data === null ? null : JSON.parse(r.data), hash: r.hash,
    }),
  );
  return [keyLine.trim(), ...lines].join("\n") + "\n";
}
