/**
 * The PostgreSQL store under a partition (store/postgres.ts): every call has a deadline, so a connection that is reset
 * or stalls — half-open for good — fails like a refusal (StoreUnavailableError, a 503 at the gateway) within it, and
 * the pool replaces itself: once PostgreSQL answers again, so does the store, with no restart. PostgreSQL is reached
 * through the fault-playing TCP forwarder.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { SQL } from "bun";
import { StoreUnavailableError } from "../../../src/store/errors.ts";
import { openPostgresStore } from "../../../src/store/postgres.ts";
import type { Store } from "../../../src/store/types.ts";
import { PG_URL } from "../../helpers/store-harness.ts";
import { startForwarder, type ForwarderFault, type TcpForwarder } from "../../helpers/tcp-forwarder.ts";

const TIMEOUT_MS = 400;
const schema = `ath_pgf_${crypto.randomUUID().replaceAll("-", "").slice(0, 12)}`;
let fwd: TcpForwarder;
let store: Store;

describe.skipIf(!PG_URL)("the PostgreSQL store when PostgreSQL goes away", () => {
  beforeAll(async () => {
    const pg = new URL(PG_URL);
    fwd = await startForwarder({ host: pg.hostname, port: Number(pg.port || 5432) });
    const url = new URL(PG_URL);
    url.port = String(fwd.port);
    store = await openPostgresStore(url.href, { schema, max: 3, timeoutMs: TIMEOUT_MS });
  });
  afterAll(async () => {
    await store?.close().catch(() => undefined);
    await fwd?.close();
    const sql = new SQL(PG_URL, { max: 1 });
    await sql.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await sql.close();
  });

  for (const fault of ["refuse", "reset", "stall"] as const satisfies readonly ForwarderFault[]) {
    test(`${fault}: reads, writes and transactions fail with StoreUnavailableError within the deadline; back, the store answers`, async () => {
      expect(await store.setMetaIfAbsent("probe", "1")).toBe("1");
      await fwd.setFault(fault);
      try {
        for (const attempt of [
          () => store.getMeta("probe"),
          () => store.setMeta("probe", "2"),
          () => store.appendAudit({ type: "t", at: 1 }),
        ]) {
          const t0 = performance.now();
          const err = await attempt().then(() => null, (e: unknown) => e);
          expect(err).toBeInstanceOf(StoreUnavailableError);
          expect(performance.now() - t0).toBeLessThan(TIMEOUT_MS + 600);
        }
      } finally {
        await fwd.restore();
      }
      // the stalled connections stay half-open for good: the pool replaced them; answered within a few deadlines
      const t0 = performance.now();
      let value: string | null | undefined;
      while (value === undefined && performance.now() - t0 < 5_000) value = await store.getMeta("probe").catch(() => undefined);
      expect(value).toBe("1");
      expect(performance.now() - t0).toBeLessThan(5_000);
      await store.setMeta("probe", "1");
    }, 20_000);
  }
});
