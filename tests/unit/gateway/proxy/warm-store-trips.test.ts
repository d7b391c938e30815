/**
 * DESIGN §13: a warm proxied request makes no store round trip — token, agent, provider and grant come from the
 * cache — with the canonical request, scope_rules, a policy and budgets in the path (a budget counts in the store only
 * for the requests it matches). Counted at the Store boundary, under the cache, on SQLite and on PostgreSQL: every
 * call the gateway makes to the store while warm requests run is recorded by name.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { openPostgresStore } from "../../../../src/store/postgres.ts";
import { openSqliteStore } from "../../../../src/store/sqlite.ts";
import type { Store } from "../../../../src/store/types.ts";
import { fullFlow } from "../../../helpers/agent.ts";
import { scriptedGateway, type InProcess } from "../../../helpers/in-process.ts";
import { PG_URL, postgresHarness, type Harness } from "../../../helpers/store-harness.ts";

/** The store with every method call (but the change feed's subscription) recorded by name, once `counting` is on. */
function counted(inner: Store): { store: Store; calls: string[]; counting: { on: boolean } } {
  const calls: string[] = [];
  const counting = { on: false };
  const store = new Proxy(inner, {
    get(target, name, receiver) {
      const v = Reflect.get(target, name, receiver) as unknown;
      if (typeof v !== "function" || name === "changes") return v;
      return (...args: unknown[]) => {
        if (counting.on) calls.push(String(name));
        return (v as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return { store, calls, counting };
}

const POLICY = [{ match: ["DELETE /**"], action: "deny" as const, reason: "no deletes" }];
/** Matches nothing the warm requests send: evaluated on every call, counted on none. */
const BUDGETS = [{ match: ["POST /v1/expensive"], limit: 5, window: "1d" as const }];

let g: InProcess | undefined;
let harness: Harness | undefined;
afterEach(async () => {
  await g?.close();
  g = undefined;
  await harness?.dispose();
  harness = undefined;
});

async function warmTrips(raw: Store, rateLimited: boolean): Promise<{ calls: string[]; budgetCounted: string[] }> {
  const c = counted(raw);
  ({ g } = await scriptedGateway(
    (p) => ({
      mail: p.config({
        scope_rules: { "mail:read": ["GET /v1/**"], "mail:send": ["POST /v1/**"] },
        policy: POLICY,
        budgets: BUDGETS,
      }),
    }),
    { store: c.store, ...(rateLimited ? { rateLimits: { proxy: { limit: 100, windowMs: 1000 } } } : {}) },
  ));
  const flow = await fullFlow(g, { provider_id: "mail", scopes: ["mail:read", "mail:send"] });
  const auth = { authorization: `Bearer ${flow.accessToken}` };
  const get = () => g!.fetch("/ath/proxy/mail/v1/messages?q=1", { headers: auth });
  const post = () => g!.fetch("/ath/proxy/mail/v1/messages", { method: "POST", headers: { ...auth, "content-type": "application/json" }, body: '{"to":"a@example.com"}' });
  // the first requests warm the cache (and lease rate capacity)
  expect((await get()).status).toBe(200);
  expect((await post()).status).toBe(200);
  c.counting.on = true;
  for (let i = 0; i < 5; i++) {
    const [a, b] = [await get(), await post()];
    expect([a.status, b.status]).toEqual([200, 200]);
    await Promise.all([a.arrayBuffer(), b.arrayBuffer()]);
  }
  // The proxy.call audit records (DESIGN §20) go out in batches off the hot path (ops/audit-queue.ts, every 50 ms or
  // 200 records), not per request: a batch that happens to be flushed while these requests run is not their trip.
  const calls = c.calls.filter((name) => name !== "appendAudit");
  // a request a budget matches is counted in the store: the count above is not blind
  c.calls.length = 0;
  await g.fetch("/ath/proxy/mail/v1/expensive", { method: "POST", headers: auth, body: "{}" });
  c.counting.on = false;
  return { calls, budgetCounted: [...c.calls] };
}

describe("warm proxied requests make no store round trip", () => {
  test("SQLite: 10 warm requests (GET and POST), policy and budgets in the path: 0 store calls", async () => {
    const { calls, budgetCounted } = await warmTrips(openSqliteStore(":memory:"), false);
    expect(calls).toEqual([]);
    expect(budgetCounted.length).toBeGreaterThan(0);
  });

  test.skipIf(PG_URL === "")("PostgreSQL: 10 warm requests (GET and POST), policy and budgets in the path: 0 store calls", async () => {
    harness = postgresHarness(PG_URL);
    const raw = await openPostgresStore(PG_URL, { schema: harness.schema!, max: 4 });
    const { calls, budgetCounted } = await warmTrips(raw, false);
    expect(calls).toEqual([]);
    expect(budgetCounted.length).toBeGreaterThan(0);
  });

  test("with the proxy rate limit on: only its leases reach the store, one per tenth of the limit", async () => {
    const { calls } = await warmTrips(openSqliteStore(":memory:"), true);
    // 100/s leases 10 at a time (ops/rate-limit.ts); the clock stands still, so 10 requests take at most 1–2 leases
    expect(calls.every((name) => name === "leaseRateCapacity")).toBe(true);
    expect(calls.length).toBeLessThanOrEqual(2);
  });
});
