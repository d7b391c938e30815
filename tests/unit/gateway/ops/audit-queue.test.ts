/**
 * The audit queue (DESIGN §13): events leave the request path and reach the store in batches — in order, one
 * statement a batch — and every queued event is written when the gateway closes.
 */
import { SILENT } from "../../../../src/gateway/ops/log.ts";
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { StoreUnavailableError } from "../../../../src/store/errors.ts";
import { auditQueue, BUSY_ITEMS, MAX_GROUP } from "../../../../src/gateway/ops/audit-queue.ts";
import { openSqliteStore } from "../../../../src/store/index.ts";
import type { AuditEvent, Store } from "../../../../src/store/types.ts";
import { makeAgent } from "../../../helpers/attestations.ts";
import { fullFlow } from "../../../helpers/agent.ts";
import { inProcessGateway, scriptedGateway, tokenFor } from "../../../helpers/in-process.ts";


describe("the audit queue", () => {
  let store: Store;
  let batches: number[];
  beforeEach(() => {
    store = openSqliteStore(":memory:");
    batches = [];
    const append = store.appendAuditBatch.bind(store);
    store.appendAuditBatch = async (id: string, events: AuditEvent[]) => {
      batches.push(events.length);
      return append(id, events);
    };
  });
  afterEach(() => store.close());

  test("events pushed together are written as one batch, in order, after the delay", async () => {
    const q = auditQueue(store, SILENT, { delayMs: 20 });
    for (let i = 0; i < 5; i++) q.push({ type: `e.${i}`, at: i });
    expect(batches).toEqual([]);
    await Bun.sleep(60);
    expect(batches).toEqual([5]);
    expect((await store.listAudit()).map((e) => e.type)).toEqual(["e.4", "e.3", "e.2", "e.1", "e.0"]);
  });

  test("a full batch is written at once, without waiting for the delay", async () => {
    const q = auditQueue(store, SILENT, { maxBatch: 3, delayMs: 60_000 });
    for (let i = 0; i < 7; i++) q.push({ type: "e", at: i });
    await q.flush();
    expect(batches).toEqual([3, 3, 1]);
    expect((await store.listAudit()).length).toBe(7);
  });

  test("a batch the store does not take is kept and written again, in order, before the ones after it (DESIGN §24)", async () => {
    const errors: string[] = [];
    const pendingSeen: number[] = [];
    let retries = 0;
    const q = auditQueue(store, { ...SILENT, error: (msg: string) => void errors.push(msg) }, {
      delayMs: 60_000,
      maxPending: 2,
      onRetry: () => void retries++,
      onPending: (n) => void pendingSeen.push(n),
    });
    const append = store.appendAuditBatch;
    store.appendAuditBatch = async () => {
      throw new Error("PostgreSQL refused");
    };
    try {
      q.push({ type: "first", at: 1 });
      // an export's flush answers 503 at once rather than wait for the store
      await expect(q.flush()).rejects.toBeInstanceOf(StoreUnavailableError);
      q.push({ type: "second", at: 2 });
      q.push({ type: "third", at: 3 });
      await expect(q.flush()).rejects.toBeInstanceOf(StoreUnavailableError);
      expect(q.pending()).toBe(3);
      expect(q.overloaded()).toBe(true); // /ready says 503 past the bound: nothing is dropped
      await Bun.sleep(200);
      expect(retries).toBeGreaterThanOrEqual(2);
    } finally {
      store.appendAuditBatch = append;
    }
    // the store is back: every event is written, in the order it happened, and the chain is contiguous
    for (let i = 0; q.pending() > 0 && i < 100; i++) await Bun.sleep(20);
    expect(q.pending()).toBe(0);
    expect(q.overloaded()).toBe(false);
    await q.flush();
    const rows = (await store.listAudit()).reverse();
    expect(rows.map((e) => [e.type, e.seq])).toEqual([["first", 1], ["second", 2], ["third", 3]]);
    expect(rows[1]!.prev_hash).toBe(rows[0]!.hash);
    expect(errors).toEqual(["audit write failed for 1 event(s): kept, written again in order once the store answers"]);
    expect(pendingSeen.at(-1)).toBe(0);
  });

  test("a batch whose COMMIT went through but whose answer was lost is written once: the retry carries its id", async () => {
    const append = store.appendAuditBatch.bind(store);
    const ids: string[] = [];
    let lost = 0;
    store.appendAuditBatch = async (id: string, events: AuditEvent[]) => {
      ids.push(id);
      const written = await append(id, events);
      if (lost++ === 0) throw new Error("connection reset after COMMIT");
      return written;
    };
    const q = auditQueue(store, SILENT, { delayMs: 60_000 });
    q.push({ type: "once", at: 1 });
    await q.flush().catch(() => undefined);
    for (let i = 0; q.pending() > 0 && i < 100; i++) await Bun.sleep(20);
    expect(ids.length).toBe(2);
    expect(ids[1]).toBe(ids[0]!);
    expect((await store.listAudit()).map((e) => [e.type, e.seq])).toEqual([["once", 1]]);
  });

  test("at shutdown a store that never answers is waited for at most the timeout, and the loss is logged", async () => {
    const errors: string[] = [];
    const q = auditQueue(store, { ...SILENT, error: (msg: string) => void errors.push(msg) }, { delayMs: 60_000 });
    const append = store.appendAuditBatch;
    store.appendAuditBatch = async () => {
      throw new Error("PostgreSQL refused");
    };
    try {
      q.push({ type: "doomed", at: 1 });
      const started = performance.now();
      await q.close(300);
      expect(performance.now() - started).toBeLessThan(2_000);
      expect(errors.at(-1)).toBe("audit events NOT written at shutdown: the store did not answer (1 event(s) lost)");
      expect(q.pending()).toBe(0);
    } finally {
      store.appendAuditBatch = append;
    }
  });
});

describe("a busy stream waits longer between writes", () => {
  test(`after a batch of ${BUSY_ITEMS}+ events and grouped calls the next waits busyDelayMs; after a small one, delayMs again`, async () => {
    const store = openSqliteStore(":memory:");
    const q = auditQueue(store, SILENT, { delayMs: 20, busyDelayMs: 5_000 });
    const count = async () => (await store.listAudit({ limit: 1000 })).length;
    q.push({ type: "quiet", at: 1 });
    await Bun.sleep(300);
    expect(await count()).toBe(1); // written after delayMs
    const key = {};
    for (let n = 0; n < BUSY_ITEMS; n++) q.group(key, n, (i) => ({ type: "proxy.call", at: 2, data: { calls: [] as number[] } }), (e, i) => void (e.data as { calls: number[] }).calls.push(i));
    await Bun.sleep(300);
    expect(await count()).toBe(2); // that batch (one record of BUSY_ITEMS calls) was not busy-delayed: the one before was small
    q.push({ type: "after a busy batch", at: 3 });
    await Bun.sleep(300);
    expect(await count()).toBe(2); // waits busyDelayMs, not delayMs
    await q.flush();
    expect(await count()).toBe(3);
    q.push({ type: "after a small batch", at: 4 });
    await Bun.sleep(300);
    expect(await count()).toBe(4);
    await store.close();
  });
});

describe("grouped events (a token's proxied calls)", () => {
  let store: Store;
  beforeEach(() => {
    store = openSqliteStore(":memory:");
  });
  afterEach(() => store.close());
  // items are added to data.calls as they are: the queue decides which event, the caller what adding means
  const open = (i: { client_id: string; n: number }) => ({ type: "proxy.call", at: 1, client_id: i.client_id, data: { calls: [] as number[] } });
  const add = (e: AuditEvent, i: { n: number }) => void (e.data as { calls: number[] }).calls.push(i.n);

  test("one record per key and batch, its items in order, queued where the first came; the next batch starts afresh", async () => {
    const q = auditQueue(store, SILENT, { delayMs: 60_000 });
    const a = {};
    const b = {};
    q.group(a, { client_id: "a", n: 1 }, open, add);
    q.push({ type: "between", at: 2 });
    q.group(b, { client_id: "b", n: 1 }, open, add);
    q.group(a, { client_id: "a", n: 2 }, open, add);
    q.group(a, { client_id: "a", n: 3 }, open, add);
    await q.flush();
    q.group(a, { client_id: "a", n: 4 }, open, add);
    await q.flush();
    const rs = (await store.listAudit()).reverse();
    expect(rs.map((r) => [r.type, r.client_id ?? null, r.data])).toEqual([
      ["proxy.call", "a", { calls: [1, 2, 3] }],
      ["between", null, undefined],
      ["proxy.call", "b", { calls: [1] }],
      ["proxy.call", "a", { calls: [4] }],
    ]);
  });

  test(`a record holds at most ${MAX_GROUP} items; more start the next record`, async () => {
    const q = auditQueue(store, SILENT, { delayMs: 60_000 });
    const key = {};
    for (let n = 0; n < MAX_GROUP + 3; n++) q.group(key, { client_id: "a", n }, open, add);
    await q.flush();
    const rs = (await store.listAudit()).reverse();
    expect(rs.map((r) => (r.data as { calls: unknown[] }).calls.length)).toEqual([MAX_GROUP, 3]);
    expect((rs[1]!.data as { calls: number[] }).calls[0]).toBe(MAX_GROUP);
  });

  test("a batch that fills at its first item (maxBatch) is written with that item, and the next call opens a new record", async () => {
    const q = auditQueue(store, SILENT, { delayMs: 60_000, maxBatch: 1 });
    const key = {};
    q.group(key, { client_id: "a", n: 1 }, open, add);
    q.group(key, { client_id: "a", n: 2 }, open, add);
    await q.flush();
    const rs = (await store.listAudit()).reverse();
    expect(rs.map((r) => r.data)).toEqual([{ calls: [1] }, { calls: [2] }]);
  });
});

describe("the gateway's audit trail", () => {
  test("a token's proxied calls of one batch are one proxy.call record: each request line once, with every call's time", async () => {
    const { g, p } = await scriptedGateway((p) => ({ mail: p.config({ scope_rules: { "mail:read": ["GET /m/*"] } }) }), { auditDelayMs: 600_000 });
    const { accessToken } = await fullFlow(g, { provider_id: "mail", scopes: ["mail:read"] });
    p.routes.set("/m/1", () => Response.json({ id: 1 }));
    p.routes.set("/m/2", () => Response.json({ error: "not_found" }, { status: 404 }));
    const start = g.clock.ms;
    for (const path of ["/m/1", "/m/1?q=secret", "/m/2", "/m/1"]) {
      const res = await g.fetch(`/ath/proxy/mail${path}`, { headers: { authorization: `Bearer ${accessToken}` } });
      await res.arrayBuffer();
      g.clock.ms += 7; // each call at its own time
    }
    await g.gw.auditLog.flush();
    const records = await g.gw.store.listAudit({ type: "proxy.call" });
    await g.close();
    expect(records).toHaveLength(1);
    expect(records[0]!.at).toBe(start);
    // the query is no part of the path: the second call is the first one's line; the fourth goes back to it
    expect(records[0]!.data).toEqual({
      calls: [
        { method: "GET", ms: [0, 7, 21], path: "/m/1", status: 200 },
        { method: "GET", ms: [14], path: "/m/2", status: 404 },
      ],
    });
  });

  test(`a call unlike the newest 8 lines of its record starts a line of its own: matching costs a call at most that many comparisons`, async () => {
    const { g, p } = await scriptedGateway((p) => ({ mail: p.config({ scope_rules: { "mail:read": ["GET /m/*"] } }) }), { auditDelayMs: 600_000 });
    const { accessToken } = await fullFlow(g, { provider_id: "mail", scopes: ["mail:read"] });
    for (let i = 0; i < 10; i++) p.routes.set(`/m/${i}`, () => Response.json({ id: i }));
    for (const i of [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 2, 0]) {
      const res = await g.fetch(`/ath/proxy/mail/m/${i}`, { headers: { authorization: `Bearer ${accessToken}` } });
      await res.arrayBuffer();
    }
    await g.gw.auditLog.flush();
    const [record] = await g.gw.store.listAudit({ type: "proxy.call" });
    await g.close();
    const lines = (record!.data as { calls: { path: string; ms: number[] }[] }).calls;
    // /m/2 is among the newest 8 lines when it comes again; /m/0 is not: a second line for it
    expect(lines.map((l) => [l.path, l.ms.length])).toEqual([
      ["/m/0", 1], ["/m/1", 1], ["/m/2", 2], ["/m/3", 1], ["/m/4", 1], ["/m/5", 1], ["/m/6", 1], ["/m/7", 1], ["/m/8", 1], ["/m/9", 1], ["/m/0", 1],
    ]);
  });

  test("closing the gateway writes every queued event (what SIGTERM does)", async () => {
    const g = await inProcessGateway({ auditDelayMs: 600_000 }); // nothing is written until close
    await tokenFor(g, await makeAgent());
    const store = g.gw.store;
    expect(await store.listAudit({ limit: 1000 })).toEqual([]);
    const listed: string[] = [];
    const original = store.close.bind(store);
    store.close = async () => {
      listed.push(...(await store.listAudit({ limit: 1000 })).map((e) => e.type));
      await original();
    };
    await g.close();
    expect(listed).toContain("agent.registered");
    expect(listed).toContain("token.issued");
  });
});
