/**
 * The audit queue (DESIGN §13): events leave the request path and reach the store in batches — in order, one
 * statement a batch — and every queued event is written when the gateway closes.
 */
import { SILENT } from "../../../../src/gateway/ops/log.ts";
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { auditQueue } from "../../../../src/gateway/ops/audit-queue.ts";
import { openSqliteStore } from "../../../../src/store/index.ts";
import type { AuditEvent, Store } from "../../../../src/store/types.ts";
import { makeAgent } from "../../../helpers/attestations.ts";
import { inProcessGateway, tokenFor } from "../../../helpers/in-process.ts";


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

describe("the gateway's audit trail", () => {
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
