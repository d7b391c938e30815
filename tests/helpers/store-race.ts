/**
 * A race at the store, made certain: requests sent together may still reach PostgreSQL one after the other, and then
 * a test of "exactly one wins" passes for a read-then-write spend as well as for one atomic statement. `raceAtStore`
 * holds the tables the race writes (LOCK … IN EXCLUSIVE MODE: reads go on, writes wait) while the requests are sent,
 * waits until `racers` of the gateways' connections wait behind that lock — directly, or behind a connection that
 * does (one instance locking the agent's row before its write) — and only then lets them all go at once. If they
 * never all wait there, it fails saying so: a race that did not happen is not passed as one.
 */
import { SQL } from "bun";
import { PG_URL } from "./store-harness.ts";

export interface StoreRace<T> {
  /** The schema of the gateways (tests/helpers/postgres-pair.ts). */
  schema: string;
  /** The tables whose writes are held (matched against the schema's table names). */
  tables: RegExp;
  /** How many connections must be waiting at once before the lock is let go. */
  racers: number;
  /** Sends the racing requests (not awaited before they all wait). */
  send: () => Promise<T>;
  /** How long they may take to line up (default 10 s). */
  withinMs?: number;
}

/** Runs `send` with the race's writes held until `racers` connections wait on them; its result, after they went. */
export async function raceAtStore<T>(o: StoreRace<T>): Promise<T> {
  const sql = new SQL(PG_URL, { max: 2 });
  let sent: Promise<T> | undefined;
  try {
    const names = (await sql`SELECT tablename FROM pg_tables WHERE schemaname = ${o.schema}`).map((r: { tablename: string }) => r.tablename);
    const held = names.filter((n: string) => o.tables.test(n));
    if (held.length === 0) throw new Error(`no table of ${o.schema} matches ${o.tables} (there are: ${names.join(", ")})`);
    await sql.begin(async (tx) => {
      await tx.unsafe(`LOCK TABLE ${held.map((n: string) => `"${o.schema}"."${n}"`).join(", ")} IN EXCLUSIVE MODE`);
      const [{ pid }] = await tx`SELECT pg_backend_pid() AS pid`;
      sent = o.send();
      // a rejection is the test's to see once the lock is gone; here it must not go unhandled
      sent.catch(() => undefined);
      const until = Date.now() + (o.withinMs ?? 10_000);
      for (;;) {
        const waiting = await waitingBehind(sql, Number(pid));
        if (waiting >= o.racers) return;
        if (Date.now() > until) throw new Error(`only ${waiting} of ${o.racers} racers ever waited at the store together: the requests did not race`);
        await Bun.sleep(10);
      }
    });
  } finally {
    await sql.close();
  }
  return sent!;
}

// internal

/** Connections waiting on a lock held by `pid`, or by a connection itself waiting on it (transitively). */
async function waitingBehind(sql: SQL, pid: number): Promise<number> {
  const rows = (await sql`SELECT pid, pg_blocking_pids(pid) AS blockers FROM pg_stat_activity WHERE wait_event_type = 'Lock'`) as { pid: number; blockers: ArrayLike<number> | string }[];
  const edges = rows.map((r) => ({ pid: Number(r.pid), blockers: parseBlockers(r.blockers) }));
  const behind = new Set<number>();
  for (let grew = true; grew; ) {
    grew = false;
    for (const e of edges) {
      if (!behind.has(e.pid) && e.blockers.some((b) => b === pid || behind.has(b))) {
        behind.add(e.pid);
        grew = true;
      }
    }
  }
  return behind.size;
}

/** `int[]` as the driver hands it over: a typed array or an array, or PostgreSQL's text form `{1,2}`. */
function parseBlockers(v: ArrayLike<number> | string): number[] {
  if (typeof v !== "string") return Array.from(v, Number);
  return v.replace(/[{}]/g, "").split(",").filter(Boolean).map(Number);
}
