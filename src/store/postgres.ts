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
}

const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

export async function openPostgresStore(url: string, opts: PostgresStoreOptions = {}): Promise<Store> {
  const { schema } = opts;
  if (schema !== undefined && !SCHEMA_NAME.test(schema)) {
    throw new TypeError(`invalid PostgreSQL schema name ${JSON.stringify(schema)}: expected ${SCHEMA_NAME}`);
  }
  const sql = new SQL(url, {
    max: opts.max ?? 10,
    ...(schema ? { connection: { search_path: schema } } : {}),
  });
  try {
    await migrate(sql, schema);
  } catch (err) {
    await sql.close();
    throw err;
  }
  return sqlStore(driver(sql, notifyFeed(sql, url, schema)));
}

// internal

function driver(sql: SQL, feed: ChangeFeed): Driver {
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
  const over = (conn: Pick<SQL, "unsafe">, inTransaction: boolean): Driver => {
    const d: Driver = {
      kind: "postgres",
      all: async (q, params = []) => [...((await conn.unsafe(text(q), params)) as Row[])],
      run: async (q, params = []) => ((await conn.unsafe(text(q), params)) as { count: number }).count,
      // sql.begin reserves one connection of the pool for the transaction.
      transaction: (fn) => (inTransaction ? fn(d) : sql.begin((tx) => fn(over(tx, true)))),
      changes: () => feed,
      close: () => sql.close(),
    };
    return d;
  };
  return over(sql, false);
}

/**
 * PostgreSQL's change feed (store/notify.ts): NOTIFY on a channel per schema, heard on a connection of its own, so
 * its `onclose` speaks for the listener alone and the cache can stop trusting itself the moment it drops.
 */
function notifyFeed(sql: SQL, url: string, schema: string | undefined): ChangeFeed {
  const channel = `ath_changes_${schema ?? "public"}`;
  const sender = crypto.randomUUID();
  return {
    async publish(keys) {
      for (const payload of payloads(sender, keys)) await sql.unsafe("SELECT pg_notify($1, $2)", [channel, payload]);
    },
    async subscribe(onChange, onTrust) {
      onTrust(false);
      const listener = new SQL(url, {
        max: 1,
        connection: { application_name: "ath-changes", ...(schema ? { search_path: schema } : {}) },
        onclose: () => onTrust(false),
      });
      const subscription = await listener.listen(
        channel,
        (payload: string) => {
          const [from, ...keys] = payload.split(" ");
          if (from !== sender) for (const key of keys) onChange(key);
        },
        () => onTrust(true),
      );
      return async () => {
        await subscription.unlisten().catch(() => undefined);
        await listener.close();
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
