/**
 * The embedded Store on `bun:sqlite`: WAL (readers never wait for the writer), a busy timeout (several processes
 * may share the file), foreign keys on, cached prepared statements, migrations under BEGIN IMMEDIATE.
 */
import { Database, type SQLQueryBindings } from "bun:sqlite";
import { chmodSync, mkdirSync } from "node:fs";
import { dirname } from "node:path";
import { META_TABLE, SCHEMA_VERSION_KEY, migrations } from "./migrations.ts";
import type { ChangeFeed } from "./notify.ts";
import type { Row } from "./rows.ts";
import { BACKSTOP_PAGES, type Checkpointer, startCheckpointer } from "./sqlite-checkpointer.ts";
import { type Driver, sqlStore } from "./sql-store.ts";
import type { Store } from "./types.ts";

const BUSY_TIMEOUT_MS = 5000;

/** Opens (creating if needed) the SQLite database at `path` — or `:memory:` — and brings its schema up to date. */
export function openSqliteStore(path: string): Store {
  const memory = path === ":memory:" || path === "";
  if (!memory) mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const db = new Database(path, { create: true, readwrite: true, strict: true });
  try {
    db.exec(`PRAGMA busy_timeout = ${BUSY_TIMEOUT_MS}`);
    db.exec("PRAGMA journal_mode = WAL");
    db.exec("PRAGMA synchronous = NORMAL");
    // Until the checkpointer below runs (and should it fail): small WAL checkpoints, often — an automatic checkpoint
    // runs in the committing statement, on the event loop, and the default of 1,000 pages stalled a sweep's batches
    // by 30–40 ms (scripts/bench/sweep.ts; 100 pages: under 20 ms).
    db.exec(`PRAGMA wal_autocheckpoint = ${AUTOCHECKPOINT_PAGES}`);
    db.exec("PRAGMA foreign_keys = ON");
    // The file holds hashes and sealed upstream tokens: owner-only (SQLite gives -wal/-shm the same mode).
    if (!memory) chmodSync(path, 0o600);
    migrate(db);
  } catch (err) {
    db.close();
    throw err;
  }
  // A file's WAL is checkpointed by a worker thread (sqlite-checkpointer.ts): the gateway's own connection then only
  // checkpoints as a backstop, at BACKSTOP_PAGES.
  const d = driver(db);
  if (!memory) {
    d.checkpointer = startCheckpointer(path, {
      onReady: () => setAutocheckpoint(db, BACKSTOP_PAGES),
      onFailed: () => setAutocheckpoint(db, AUTOCHECKPOINT_PAGES),
      exclusive: d.exclusive,
    });
  }
  return sqlStore(d);
}

/** Pages of WAL after which a commit checkpoints on its own connection, when no checkpointer runs. */
const AUTOCHECKPOINT_PAGES = 100;

function setAutocheckpoint(db: Database, pages: number): void {
  try {
    db.exec(`PRAGMA wal_autocheckpoint = ${pages}`);
  } catch {
    // closed meanwhile
  }
}

// internal

/**
 * bun:sqlite has one connection, so a statement issued by another request while a transaction awaits would run
 * inside it: outside a transaction, every statement (and every other transaction) first waits for the running one.
 */
function driver(db: Database): Driver & { checkpointer: Checkpointer | null; exclusive: (fn: () => Promise<void>) => Promise<void> } {
  const bind = (params: unknown[]) => params.map((p) => (p === undefined ? null : p)) as SQLQueryBindings[];
  const all = (sql: string, params: unknown[] = []) => db.query<Row, SQLQueryBindings[]>(sql).all(...bind(params));
  const run = (sql: string, params: unknown[] = []) => db.query<Row, SQLQueryBindings[]>(sql).run(...bind(params)).changes;
  /** A statement outside a transaction, or a transaction, committed: the checkpointer is told how many rows it changed (reads are not). */
  const wrote = (rows: number) => self.checkpointer?.wrote(rows);
  /** Rows the running transaction changed so far (from 0 at its BEGIN). */
  let txRows = 0;
  let running: Promise<void> | null = null;
  /**
   * A WAL checkpoint in progress (sqlite-checkpointer.ts): writes wait for it, reads need not. (Each wait is a loop
   * in the waiting function itself, so the check and what follows it run with no other waiter in between.)
   */
  let checkpointing: Promise<void> | null = null;
  const feed = dataVersionFeed(db);
  const inside: Driver = {
    kind: "sqlite",
    all: async (sql, params) => {
      const rows = all(sql, params);
      if (!sql.startsWith("SELECT")) txRows += rows.length;
      return rows;
    },
    run: async (sql, params) => {
      const changes = run(sql, params);
      txRows += changes;
      return changes;
    },
    transaction: (fn) => fn(inside),
    changes: () => feed,
    close: async () => {
      throw new TypeError("close() inside a transaction");
    },
  };
  const self = {
    kind: "sqlite" as const,
    checkpointer: null as Checkpointer | null,
    async exclusive(fn: () => Promise<void>) {
      while (running || checkpointing) await (running ?? checkpointing);
      let end: () => void = () => undefined;
      checkpointing = new Promise((resolve) => (end = resolve));
      try {
        await fn();
      } finally {
        checkpointing = null;
        end();
      }
    },
    async all(sql: string, params?: unknown[]) {
      const writes = !sql.startsWith("SELECT"); // UPDATE … RETURNING
      while (running || (writes && checkpointing)) await (running ?? checkpointing);
      const rows = all(sql, params);
      if (writes) wrote(rows.length);
      return rows;
    },
    async run(sql: string, params?: unknown[]) {
      while (running || checkpointing) await (running ?? checkpointing);
      const changes = run(sql, params);
      wrote(changes);
      return changes;
    },
    async transaction<T>(fn: (tx: Driver) => Promise<T>): Promise<T> {
      while (running || checkpointing) await (running ?? checkpointing);
      let end: () => void = () => undefined;
      running = new Promise((resolve) => (end = resolve));
      try {
        // IMMEDIATE takes the write lock now, so a decision never fails half-way on another process's lock.
        db.exec("BEGIN IMMEDIATE");
        txRows = 0;
        try {
          const result = await fn(inside);
          db.exec("COMMIT");
          wrote(txRows);
          return result;
        } catch (err) {
          if (db.inTransaction) db.exec("ROLLBACK");
          throw err;
        }
      } finally {
        running = null;
        end();
      }
    },
    changes: () => feed,
    close: async () => {
      // The worker's connection closes first, so this one (the last) checkpoints and removes the WAL as it closes.
      await self.checkpointer?.close();
      db.close();
    },
  };
  return self;
}

/** How often another process's commits to the same file are looked for. */
const DATA_VERSION_POLL_MS = 50;

/**
 * SQLite's change feed: this process's own writes need no announcement (one connection), and `PRAGMA data_version`
 * changes only when *another* connection committed — then anything may have changed.
 */
function dataVersionFeed(db: Database): ChangeFeed {
  const version = () => Number((db.query("PRAGMA data_version").get() as { data_version: number }).data_version);
  return {
    publish: async () => undefined,
    async subscribe(onChange, onTrust) {
      let seen = version();
      const timer = setInterval(() => {
        try {
          const now = version();
          if (now !== seen) {
            seen = now;
            onChange("*");
          }
        } catch {
          onChange("*"); // the file is unreadable now: nothing cached can be vouched for
        }
      }, DATA_VERSION_POLL_MS);
      timer.unref();
      onTrust(true);
      return async () => clearInterval(timer);
    },
  };
}

function migrate(db: Database): void {
  const all = migrations("sqlite");
  // IMMEDIATE takes the write lock before reading the version, so two processes opening a fresh file
  // cannot both apply migration 1.
  db.transaction(() => {
    db.exec(META_TABLE);
    const row = db.query<{ value: string }, [string]>("SELECT value FROM meta WHERE key = ?").get(SCHEMA_VERSION_KEY);
    const current = row ? Number(row.value) : 0;
    if (current > all.length) {
      throw new Error(`database schema version ${current} is newer than this ath (${all.length}); upgrade ath`);
    }
    all.slice(current).forEach((sql) => db.exec(sql));
    db.query("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value")
      .run(SCHEMA_VERSION_KEY, String(all.length));
  }).immediate();
}
