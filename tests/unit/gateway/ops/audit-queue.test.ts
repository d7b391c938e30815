/**
 * The audit queue (DESIGN §13): events leave the request path and reach the store in batches — in order, one
 * statement a batch — and every queued event is written when the gateway closes.
 */
import { SILENT } from "../../../../src/gateway/ops/log.ts";
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { auditQueue, MAX_GROUP } from "../../../../src/gateway/ops/audit-queue.ts";
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
    const append = store.appendAudit.bind(store);
    store.appendAudit = async (...events: AuditEvent[]) => {
      batches.push(events.length);
      await append(...events);
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

  test("a failed write is logged, and later batches still go through", async () => {
    const errors: string[] = [];
    const q = auditQueue(store, { ...SILENT, error: (msg: string) => void errors.push(msg) }, { delayMs: 60_000 });
    const append = store.appendAudit;
    store.appendAudit = async () => {
      throw new Error("disk full");
    };
    q.push({ type: "lost", at: 1 });
    await q.flush();
    store.appendAudit = append;
    q.push({ type: "kept", at: 2 });
    await q.flush();
    expect(errors).toEqual(["audit write failed for 1 event(s)"]);
    expect((await store.listAudit()).map((e) => e.type)).toEqual(["kept"]);
  });
});

describe("grouped events (a token's proxied calls)", () => {
  let store: Store;
  beforeEach(() => {
    store = openSqliteStore(":memory:");
  });
  afterEach(() => store.close());
  const make = (client_id: string) => () => ({ type: "proxy.call", at: 1, client_id });

  test("one record per key and batch, its items in order, queued where the first came; the next batch starts afresh", async () => {
    const q = auditQueue(store, SILENT, { delayMs: 60_000 });
    const a = {};
    const b = {};
    q.group(a, make("a"), { n: 1 });
    q.push({ type: "between", at: 2 });
    q.group(b, make("b"), { n: 1 });
    q.group(a, make("a"), { n: 2 });
    q.group(a, make("a"), { n: 3 });
    await q.flush();
    q.group(a, make("a"), { n: 4 });
    await q.flush();
    const rs = (await store.listAudit()).reverse();
    expect(rs.map((r) => [r.type, r.client_id ?? null, r.data])).toEqual([
      ["proxy.call", "a", { calls: [{ n: 1 }, { n: 2 }, { n: 3 }] }],
      ["between", null, undefined],
      ["proxy.call", "b", { calls: [{ n: 1 }] }],
      ["proxy.call", "a", { calls: [{ n: 4 }] }],
    ]);
  });

  test(`a record holds at most ${MAX_GROUP} items; more start the next record`, async () => {
    const q = auditQueue(store, SILENT, { delayMs: 60_000 });
    const key = {};
    for (let n = 0; n < MAX_GROUP + 3; n++) q.group(key, make("a"), { n });
    await q.flush();
    const rs = (await store.listAudit()).reverse();
    expect(rs.map((r) => (r.data as { calls: unknown[] }).calls.length)).toEqual([MAX_GROUP, 3]);
    expect((rs[1]!.data as { calls: { n: number }[] }).calls[0]!.n).toBe(MAX_GROUP);
  });
});

describe("the gateway's audit trail", () => {
  test("a token's proxied calls of one batch are one proxy.call record, each call with its time, method, path and status", async () => {
    const { g, p } = await scriptedGateway((p) => ({ mail: p.config({ scope_rules: { "mail:read": ["GET /m/*"] } }) }), { auditDelayMs: 600_000 });
    const { accessToken } = await fullFlow(g, { provider_id: "mail", scopes: ["mail:read"] });
    p.routes.set("/m/1", () => Response.json({ id: 1 }));
    p.routes.set("/m/2", () => Response.json({ error: "not_found" }, { status: 404 }));
    for (const path of ["/m/1", "/m/1?q=secret", "/m/2"]) {
      const res = await g.fetch(`/ath/proxy/mail${path}`, { headers: { authorization: `Bearer ${accessToken}` } });
      await res.arrayBuffer();
    }
    await g.gw.auditLog.flush();
    const grouped = (await g.gw.store.listAudit({ type: "proxy.call" })).map((r) => r.data as { calls: Record<string, unknown>[] });
    await g.close();
    expect(grouped).toHaveLength(1);
    expect(grouped[0]!.calls.map(({ at, ...rest }) => (expect(typeof at).toBe("string"), rest))).toEqual([
      { method: "GET", path: "/m/1", status: 200 },
      { method: "GET", path: "/m/1", status: 200 },
      { method: "GET", path: "/m/2", status: 404 },
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
