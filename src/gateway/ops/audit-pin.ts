/**
 * The audit chain's last verified head, kept where the store alone cannot rewrite it (DESIGN §20; issue 35): a file in
 * the gateway's data dir, beside master.key — `audit-head.<store>.json`, one per store the data dir has served, named
 * by the store's address without credentials (a PostgreSQL password change keeps the file).
 *
 * Decision: a local file, not a value sealed or MACed in the store. Someone who can write the store can put back an
 * older sealed value (or delete the checkpoints, which are signed values already) and rewrite everything after it;
 * only state outside the store survives that. Instances sharing PostgreSQL keep one file each: each walks the whole
 * chain from its own pin at each checkpoint (every 60 s), so what any instance has verified is checked by it again.
 * Instances started with one data dir share the file; writes replace it whole (write, then rename).
 */
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import type { AuditPin, PinnedHead } from "../domain/audit-guard.ts";

/** A pin that lives as long as the process (createGateway without a data dir: tests, embedding). */
export function memoryAuditPin(): AuditPin {
  let head: PinnedHead | null = null;
  return { where: "memory", read: () => head, write: (h) => void (head = { ...h }) };
}

/** The pin of the store at `db` (the `--db` value), in `dataDir`. */
export function fileAuditPin(dataDir: string, db: string): AuditPin {
  const store = storeAddress(db);
  const path = join(dataDir, `audit-head.${createHash("sha256").update(store).digest("hex").slice(0, 16)}.json`);
  return {
    where: path,
    read() {
      if (!existsSync(path)) return null;
      let o: Record<string, unknown>;
      try {
        o = JSON.parse(readFileSync(path, "utf8")) as Record<string, unknown>;
      } catch (err) {
        throw new Error(`${path} is not a pinned audit head (${err instanceof Error ? err.message : String(err)}): remove it to trust the store's audit chain as it is`);
      }
      if (typeof o.kid !== "string" || !Number.isSafeInteger(o.seq) || (o.seq as number) < 0 || typeof o.hash !== "string" || !/^[0-9a-f]{64}$/.test(o.hash)) {
        throw new Error(`${path} is not a pinned audit head: remove it to trust the store's audit chain as it is`);
      }
      return { kid: o.kid, seq: o.seq as number, hash: o.hash };
    },
    write(h) {
      mkdirSync(dataDir, { recursive: true, mode: 0o700 });
      const tmp = `${path}.${process.pid}.${crypto.randomUUID()}.tmp`;
      writeFileSync(tmp, `${JSON.stringify({ store, kid: h.kid, seq: h.seq, hash: h.hash })}\n`, { mode: 0o600 });
      renameSync(tmp, path);
    },
  };
}

/** The store's address without what may change under it: credentials and connection options. */
export function storeAddress(db: string): string {
  if (/^postgres(ql)?:\/\//i.test(db)) {
    const u = new URL(db);
    const schema = u.searchParams.get("schema");
    return `postgres://${u.hostname.toLowerCase()}:${u.port || "5432"}${u.pathname}${schema ? `?schema=${schema}` : ""}`;
  }
  return `sqlite:${resolve(db.replace(/^sqlite:(\/\/)?/i, ""))}`;
}
