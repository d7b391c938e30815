/** Opens the Store named by `--db`: `sqlite:PATH` (or a bare path) or `postgres://…` / `postgresql://…`. */
import { openPostgresStore } from "./postgres.ts";
import { openSqliteStore } from "./sqlite.ts";
import type { Store } from "./types.ts";

export type * from "./types.ts";
export { openPostgresStore, type PostgresStoreOptions } from "./postgres.ts";
export { openSqliteStore } from "./sqlite.ts";

/**
 * `postgres://user@host/db?schema=ath` puts the tables in schema `ath` (the parameter is ath's, not libpq's,
 * and is removed before connecting); `timeout_ms=N` (ath's too) is the store's deadline and `pool=N` its pool size
 * (postgres.ts).
 */
export async function openStore(spec: string): Promise<Store> {
  if (/^postgres(ql)?:\/\//i.test(spec)) {
    const url = new URL(spec);
    const schema = url.searchParams.get("schema") ?? undefined;
    const timeout = url.searchParams.get("timeout_ms");
    const pool = url.searchParams.get("pool");
    for (const ours of ["schema", "timeout_ms", "pool"]) url.searchParams.delete(ours);
    if (timeout !== null && !/^[1-9][0-9]{1,5}$/.test(timeout)) throw new TypeError(`timeout_ms must be a number of milliseconds from 10 to 999999, not ${JSON.stringify(timeout)}`);
    if (pool !== null && !/^[1-9][0-9]{0,2}$/.test(pool)) throw new TypeError(`pool must be a number of connections from 1 to 999, not ${JSON.stringify(pool)}`);
    return openPostgresStore(url.toString(), { schema, ...(timeout === null ? {} : { timeoutMs: Number(timeout) }), ...(pool === null ? {} : { max: Number(pool) }) });
  }
  if (/^sqlite:/i.test(spec)) return openSqliteStore(spec.replace(/^sqlite:(\/\/)?/i, ""));
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(spec)) {
    throw new TypeError(`unsupported store ${JSON.stringify(spec.split(":")[0])}: use sqlite:PATH or postgres://…`);
  }
  return openSqliteStore(spec);
}
