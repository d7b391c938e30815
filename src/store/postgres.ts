/**
 * The shared Store on PostgreSQL through `Bun.SQL`, for several `ath serve` instances on one database. Queries
 * are the ones in sql-store.ts, their `?` placeholders numbered `$1…`; every parameter is bound, never spliced.
 * Migrations run in one transaction behind `pg_advisory_xact_lock`, so instances starting together take turns.
 */
import { SQL } from "bun";
import { META_TABLE, SCHEMA_VERSION_KEY, migrations } from "./migrations.ts";
import { type ChangeFeed, payloads } from "./notify.ts";
import type { Row } from "./rows.ts";
import { type Driver, sqlStore } from "./sql-store.ts";
import type { Store } from "./types.ts";

export interface PostgresStoreOptions {
  /** Schema for ath's tables: created if missing and made the connections' search_path. */
  schema?: string;
  /** Pool size (default 10). */
  max?: number;
  /**
   * How long one statement (or a transaction between two statements) may take before the store counts as unavailable
   * (default DEFAULT_TIMEOUT_MS): a reset, a stall or a half-open connection fails like a refusal, 503 (DESIGN §24).
   */
  timeoutMs?: number;
}

/** The default store deadline: far above any statement the gateway runs (ms), well under a client's patience. */
export const DEFAULT_TIMEOUT_MS = 2_000;
/** How often the change feed proves its LISTEN connection alive (ms; never more often than the deadline). */
const HEARTBEAT_MS = 1_000;

const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

export async function openPostgresStore(url: string, opts: PostgresStoreOptions = {}): Promise<Store> {
  const { schema } = opts;
  if (schema !== undefined && !SCHEMA_NAME.test(schema)) {
    throw new TypeError(`invalid PostgreSQL schema name ${JSON.stringify(schema)}: expected ${SCHEMA_NAME}`);
  }
  const timeoutMs = opts.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const pool = new Pool(
    () =>
      new SQL(url, {
        max: opts.max ?? 10,
        // Bun's default waits 30 s for a connection a partition never completes.
        connectionTimeout: Math.max(1, Math.ceil(timeoutMs / 1000)),
        ...(schema ? { connection: { search_path: schema } } : {}),
      }),
    timeoutMs,
  );
  try {
    // No deadline: several instances starting together wait for each other's migrations.
    await migrate(pool.sql, schema);
  } catch (err) {
    await pool.close();
    throw err;
  }
  return sqlStore(driver(pool, timeoutMs, notifyFeed(pool, timeoutMs, url, schema)));
}

/** Thrown when the database does not answer within the store's deadline (the guarded driver makes it a 503). */
export class StoreDeadlineError extends Error {
  override readonly name = "StoreDeadlineError";
}

/**
 * The connection pool, replaced whole when statements miss their deadline and none has been answered for as long: a
 * connection that stalls or went half-open never answers and never closes, so without this the pool would fill with
 * them and stay stuck after the database is back. A miss while other statements are being answered is load (waiting
 * for a connection or a row lock), not a dead pool: it answers 503 and the pool stays. The old pool is closed at once
 * (what it was running fails, 503); the statements that missed together replace it once.
 */
class Pool {
  sql: SQL;
  /** When a statement of the current pool was last answered. */
  private answeredAt = performance.now();
  constructor(
    private readonly open: () => SQL,
    private readonly timeoutMs: number,
  ) {
    this.sql = open();
  }
  answered(): void {
    this.answeredAt = performance.now();
  }
  missed(stale: SQL): void {
    if (this.sql !== stale || performance.now() - this.answeredAt < this.timeoutMs) return;
    this.sql = this.open();
    this.answeredAt = performance.now();
    void stale.close({ timeout: 0 }).catch(() => undefined);
  }
  close(): Promise<void> {
    return this.sql.close();
  }
}

/** `p` within `ms`, else StoreDeadlineError (and `onMiss`, once). */
function within<T>(p: Promise<T>, ms: number, what: string, onMiss: () => void): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      onMiss();
      reject(new StoreDeadlineError(`PostgreSQL did not answer ${what} within ${ms} ms`));
    }, ms);
  });
  return Promise.race([p, deadline]).finally(() => clearTimeout(timer));
}

// internal

function driver(pool: Pool, timeoutMs: number, feed: ChangeFeed): Driver {
  const numbered = new Map<string, string>();
  const text = (q: string) => {
    let t = numbered.get(q);
    if (t === undefined) {
      let n = 0;
      t = q.replace(/\?/g, () => `$${++n}`);
      numbered.set(q, t);
    }
    return t;
  };
  // Every statement runs under the deadline; a transaction too, from its start to its first statement, between two
  // statements and from its last to COMMIT (a decision's own work in between is in-process and short).
  const over = (conn: Pick<SQL, "unsafe"> | null, inTransaction: boolean, watch?: () => void): Driver => {
    const exec = async (q: string, params: unknown[]) => {
      const sql = pool.sql;
      const r = await within(Promise.resolve((conn ?? sql).unsafe(text(q), params)), timeoutMs, "a statement", () => pool.missed(sql));
      pool.answered();
      watch?.();
      return r;
    };
    const d: Driver = {
      kind: "postgres",
      all: async (q, params = []) => [...((await exec(q, params)) as Row[])],
      run: async (q, params = []) => ((await exec(q, params)) as { count: number }).count,
      // sql.begin reserves one connection of the pool for the transaction.
      transaction: (fn) => (inTransaction ? fn(d) : transaction(fn)),
      changes: () => feed,
      close: () => pool.close(),
    };
    return d;
  };
  function transaction<T>(fn: (tx: Driver) => Promise<T>): Promise<T> {
    const sql = pool.sql;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let missed: (err: Error) => void = () => undefined;
    const arm = () => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        pool.missed(sql);
        missed(new StoreDeadlineError(`PostgreSQL did not answer within ${timeoutMs} ms in a transaction`));
      }, timeoutMs);
    };
    const deadline = new Promise<never>((_, reject) => (missed = reject));
    arm();
    return Promise.race([sql.begin((tx) => fn(over(tx, true, arm))), deadline]).finally(() => clearTimeout(timer));
  }
  return over(null, false);
}

/**
 * PostgreSQL's change feed (store/notify.ts): NOTIFY on a channel per schema, heard on a connection of its own, so
 * its `onclose` speaks for the listener alone and the cache can stop trusting itself the moment it drops.
 */
function notifyFeed(pool: Pool, timeoutMs: number, url: string, schema: string | undefined): ChangeFeed {
  const channel = `ath_changes_${schema ?? "public"}`;
  const sender = crypto.randomUUID();
  return {
    async publish(keys) {
      for (const payload of payloads(sender, keys)) {
        const sql = pool.sql;
        await within(Promise.resolve(sql.unsafe("SELECT pg_notify($1, $2)", [channel, payload])), timeoutMs, "a NOTIFY", () => pool.missed(sql));
      }
    },
    async subscribe(onChange, onTrust) {
      onTrust(false);
      const beatFrom = `${sender}~beat`;
      let listener: SQL | undefined;
      let unlisten: (() => Promise<void>) | undefined;
      let sent = 0;
      let heard = 0;
      const start = async () => {
        const l = new SQL(url, {
          max: 1,
          connectionTimeout: Math.max(1, Math.ceil(timeoutMs / 1000)),
          connection: { application_name: "ath-changes", ...(schema ? { search_path: schema } : {}) },
          onclose: () => listener === l && onTrust(false),
        });
        listener = l;
        const subscription = await within(
          l.listen(
            channel,
            (payload: string) => {
              const [from, ...keys] = payload.split(" ");
              if (from === beatFrom) heard = Math.max(heard, Number(keys[0]));
              else if (from !== sender && !from?.endsWith("~beat")) for (const key of keys) onChange(key);
            },
            () => listener === l && onTrust(true),
          ),
          timeoutMs,
          "LISTEN",
          () => undefined,
        );
        unlisten = () => subscription.unlisten();
      };
      const restart = async () => {
        onTrust(false);
        const old = listener;
        listener = undefined;
        unlisten = undefined;
        void old?.close({ timeout: 0 }).catch(() => undefined);
        await start().catch(() => undefined); // the next heartbeat tries again
      };
      await start();
      // The heartbeat: a NOTIFY of our own, heard back on the LISTEN connection within the deadline, proves that no
      // change is being missed — a connection that stalls or went half-open never says it closed (DESIGN §24).
      let beating = false;
      const timer = setInterval(async () => {
        if (beating) return;
        beating = true;
        try {
          const n = ++sent;
          const sql = pool.sql;
          await within(Promise.resolve(sql.unsafe("SELECT pg_notify($1, $2)", [channel, `${beatFrom} ${n}`])), timeoutMs, "a NOTIFY", () => pool.missed(sql));
          const until = performance.now() + timeoutMs;
          while (heard < n && performance.now() < until) await Bun.sleep(10);
          if (heard < n) await restart();
        } catch {
          await restart();
        } finally {
          beating = false;
        }
      }, Math.max(HEARTBEAT_MS, timeoutMs));
      timer.unref();
      return async () => {
        clearInterval(timer);
        await unlisten?.().catch(() => undefined);
        await listener?.close({ timeout: 0 }).catch(() => undefined);
      };
    },
  };
}

async function migrate(sql: SQL, schema: string | undefined): Promise<void> {
  const all = migrations("postgres");
  await sql.begin(async (tx) => {
    // One lock per schema: instances of the same deployment serialise, isolated test schemas do not.
    await tx`SELECT pg_advisory_xact_lock(hashtext(${`ath.migrate:${schema ?? ""}`}))`;
    // The name was checked against SCHEMA_NAME; identifiers cannot be bound parameters.
    if (schema) await tx.unsafe(`CREATE SCHEMA IF NOT EXISTS "${schema}"`);
    await tx.unsafe(META_TABLE);
    const [row] = await tx`SELECT value FROM meta WHERE key = ${SCHEMA_VERSION_KEY}`;
    const current = row ? Number(row.value) : 0;
    if (current > all.length) {
      throw new Error(`database schema version ${current} is newer than this ath (${all.length}); upgrade ath`);
    }
    for (const m of all.slice(current)) await tx.unsafe(m);
    await tx`INSERT INTO meta (key, value) VALUES (${SCHEMA_VERSION_KEY}, ${String(all.length)})
             ON CONFLICT (key) DO UPDATE SET value = excluded.value`;
  });
}
