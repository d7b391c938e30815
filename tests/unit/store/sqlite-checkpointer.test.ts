/**
 * WAL checkpoints in a worker thread (src/store/sqlite-checkpointer.ts): the gateway's connection no longer
 * checkpoints in its committing statements, yet the WAL is still folded into the database file, restarts (so it stays
 * about one interval's writes), other connections see every write, and closing the store removes the WAL.
 */
import { Database } from "bun:sqlite";
import { describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BUSY_ROWS, CHECKPOINT_BUSY_MS, CHECKPOINT_EVERY_MS, startCheckpointer } from "../../../src/store/sqlite-checkpointer.ts";
import { openSqliteStore } from "../../../src/store/index.ts";

const size = (p: string) => (existsSync(p) ? statSync(p).size : 0);

async function until(what: string, ok: () => boolean, ms = 3000): Promise<void> {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(5);
  }
}

function withDir(fn: (dir: string) => Promise<void>) {
  return async () => {
    const dir = mkdtempSync(join(tmpdir(), "ath-ckpt-"));
    try {
      await fn(dir);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };
}

describe("the WAL checkpointer", () => {
  test(
    "a write is checkpointed by the worker (the writer's own autocheckpoint off), inside `exclusive`",
    withDir(async (dir) => {
      const path = join(dir, "a.db");
      const db = new Database(path, { create: true });
      db.exec("PRAGMA journal_mode = WAL");
      db.exec("PRAGMA wal_autocheckpoint = 0");
      db.exec("CREATE TABLE t (x TEXT)");
      let ready = false;
      const spans: string[] = [];
      const ck = startCheckpointer(path, {
        onReady: () => (ready = true),
        onFailed: (err) => spans.push(`failed ${String(err)}`),
        exclusive: async (fn) => {
          spans.push("hold");
          await fn();
          spans.push("release");
        },
      });
      try {
        await until("the worker", () => ready);
        db.query("INSERT INTO t (x) VALUES (?)").run("x".repeat(2_000_000));
        // The store's change feed reads data_version as "another connection wrote": a checkpoint must not move it.
        const version = () => (db.query("PRAGMA data_version").get() as { data_version: number }).data_version;
        const v0 = version();
        const before = size(path);
        expect(size(`${path}-wal`)).toBeGreaterThan(2_000_000);
        const t = Date.now();
        ck.wrote(1);
        await until("the database file to take the WAL's pages", () => size(path) > before + 2_000_000);
        expect(Date.now() - t).toBeLessThan(CHECKPOINT_EVERY_MS + 1000);
        await until("the checkpoint to finish", () => spans.length === 2);
        expect(spans).toEqual(["hold", "release"]);
        expect(version()).toBe(v0);
        // Fully checkpointed: the next write starts the WAL over instead of appending.
        const r = await ck.checkpoint();
        expect(r.busy).toBe(0);
        expect(r.checkpointed).toBe(r.log);
        const walBefore = size(`${path}-wal`);
        db.query("INSERT INTO t (x) VALUES (?)").run("y");
        const [, frames] = db.query("PRAGMA wal_checkpoint(PASSIVE)").values()[0] as number[]; // [busy, log, checkpointed]
        expect(frames).toBeLessThan(10);
        expect(size(`${path}-wal`)).toBeLessThanOrEqual(walBefore);
      } finally {
        await ck.close();
        db.close();
      }
    }),
  );

  test(
    "a store on a file: the WAL stays bounded under a stream of audit batches, another connection sees them all, close removes the WAL",
    withDir(async (dir) => {
      const path = join(dir, "ath.db");
      const store = openSqliteStore(path);
      const event = (i: number) => ({
        type: "proxy.call", at: 1_700_000_000_000 + i, client_id: "ath_c", agent_id: "https://agent.example/a", user_id: "u", provider_id: "demo",
        data: { method: "GET", path: `/notes/${i}`, status: 200 },
      });
      await Bun.sleep(100); // the worker starts
      // The committing statement no longer checkpoints (it did at 100 pages): the database file has not grown when
      // the append resolves; the worker folds the WAL in a moment later.
      const before = size(path);
      await store.appendAudit(...Array.from({ length: 2000 }, (_, i) => event(i - 2000)));
      expect(size(`${path}-wal`)).toBeGreaterThan(100 * 4096);
      expect(size(path)).toBe(before);
      await until("the worker's checkpoint", () => size(path) > before + 100 * 4096);
      let maxWal = 0;
      for (let b = 0; b < 40; b++) {
        await store.appendAudit(...Array.from({ length: 200 }, (_, i) => event(b * 200 + i)));
        maxWal = Math.max(maxWal, size(`${path}-wal`));
        await Bun.sleep(CHECKPOINT_BUSY_MS / 2); // a busy stream: checkpoints every CHECKPOINT_BUSY_MS
      }
      // 40 batches of 200 records wrote far more than this; without checkpoints the WAL would hold it all.
      const total = 40 * 200 * 300;
      expect(maxWal).toBeLessThan(total / 2);
      const other = new Database(path, { readonly: true });
      try {
        expect((other.query("SELECT count(*) AS n, max(seq) AS s FROM audit").get() as { n: number; s: number })).toEqual({ n: 10_000, s: 10_000 });
      } finally {
        other.close();
      }
      expect((await store.auditHead()).seq).toBe(10_000);
      await store.close();
      expect(existsSync(`${path}-wal`)).toBe(false);
      const reopened = openSqliteStore(path);
      try {
        expect((await reopened.listAudit({ limit: 1 }))[0]!.seq).toBe(10_000);
      } finally {
        await reopened.close();
      }
    }),
  );

  test(
    `a store's transactions report their own rows: many small ones (fewer than ${BUSY_ROWS} rows in all) keep the quiet interval`,
    withDir(async (dir) => {
      const path = join(dir, "ath.db");
      const store = openSqliteStore(path);
      const event = (i: number) => ({ type: "token.issued", at: 1_700_000_000_000 + i, client_id: "ath_c" });
      try {
        await Bun.sleep(100); // the worker starts
        await store.appendAudit(event(0)); // the first write is checkpointed at once; the next not before CHECKPOINT_EVERY_MS
        await Bun.sleep(300);
        const before = size(path);
        // each append is one transaction of two rows (the record and the chain's head): 2 × 300 < BUSY_ROWS
        for (let i = 1; i <= 300; i++) await store.appendAudit(event(i));
        await Bun.sleep(CHECKPOINT_BUSY_MS * 6);
        expect(size(path)).toBe(before); // no busy-rate checkpoint folded them in (a running total of rows would)
      } finally {
        await store.close();
      }
    }),
  );
});
