/**
 * Nothing is signed over a chain the store rewrote (DESIGN §20; issue 35): before every checkpoint, export or sweep
 * anchor the gateway walks the chain again from the head it verified last (its pin, kept outside the store). In
 * process over a SQLite file, with the pin shared between gateways to stand for a restart; the store is changed with
 * SQL only — what someone holding the database but no key can do (tests/helpers/audit-forger.ts).
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { verifyAuditExport } from "../../../../src/agent/audit-verify.ts";
import type { AuditPin } from "../../../../src/gateway/domain/audit-guard.ts";
import { fileAuditPin, memoryAuditPin, storeAddress } from "../../../../src/gateway/ops/audit-pin.ts";
import { sweepOnce } from "../../../../src/gateway/ops/sweeper.ts";
import { openSqliteStore } from "../../../../src/store/sqlite.ts";
import { forgeChain, sqliteTables } from "../../../helpers/audit-forger.ts";
import { ADMIN_TOKEN, inProcessGateway, type InProcess } from "../../../helpers/in-process.ts";
import { tempDir } from "../../../helpers/net.ts";

let dir: { path: string; remove: () => Promise<void> };
let g: InProcess | undefined;
let pin: AuditPin;
const masterKey = crypto.getRandomValues(new Uint8Array(32));
const errors: string[] = [];
const log = {
  enabled: () => true, debug() {}, info() {}, warn() {}, announce() {}, access() {},
  error: (msg: string) => void errors.push(msg),
};

beforeEach(async () => {
  dir = await tempDir("audit-guard");
  pin = memoryAuditPin();
  errors.length = 0;
});
afterEach(async () => {
  await g?.close();
  g = undefined;
  await dir.remove();
});

const dbPath = () => join(dir.path, "ath.db");
/** A gateway on the test's store file and pin (a second call after close() is a restart). */
async function start(): Promise<InProcess> {
  g = await inProcessGateway({ store: openSqliteStore(dbPath()), masterKey, auditPin: pin, log });
  return g;
}
async function restart(): Promise<InProcess> {
  await g?.close();
  return start();
}
async function write(g: InProcess, n: number, type = "token.issued") {
  for (let i = 0; i < n; i++) g.gw.auditLog.push({ type, at: g.clock.ms, client_id: `c${i}`, data: { i } });
  await g.gw.auditLog.flush();
}
async function exportOf(g: InProcess) {
  const res = await g.fetch("/ath/admin/audit/export", { headers: { "x-ath-user-token": ADMIN_TOKEN } });
  return { status: res.status, text: await res.text() };
}
async function forge(f: Parameters<typeof forgeChain>[1]) {
  const t = sqliteTables(dbPath());
  try {
    return await forgeChain(t, f);
  } finally {
    await t.close();
  }
}
async function sql(q: string, params: unknown[] = []) {
  const t = sqliteTables(dbPath());
  try {
    return await t.all(q, params);
  } finally {
    await t.close();
  }
}
const refused = (status: number, text: string) => ({ status, ...(JSON.parse(text) as { code: string; details: { reason: string; seq: number } }) });

describe("a rewrite the gateway has verified past is refused, whenever it happens", () => {
  test("while it runs: a record rewritten and re-chained → the next export is 503, nothing signed, the error logged", async () => {
    await start();
    await write(g!, 20);
    expect((await exportOf(g!)).status).toBe(200); // verified and pinned through seq 20
    await forge({ rewrite: { seq: 4, data: { i: 400 } } });
    const r = await exportOf(g!);
    expect(refused(r.status, r.text)).toMatchObject({ status: 503, code: "NOT_READY", details: { reason: "audit_chain_tampered", seq: 20 } });
    expect(errors.join("\n")).toContain("AUDIT CHAIN REWRITTEN IN THE STORE at seq 20");
    expect(await sql("SELECT seq FROM audit_checkpoints WHERE seq > 20")).toEqual([]);
    // and it stays refused: the timer's checkpoint signs nothing either
    await expect(g!.gw.auditChain.checkpoint()).rejects.toMatchObject({ code: "NOT_READY" });
  });

  test("after a restart: the tail cut below what was verified is named (the first missing seq)", async () => {
    await start();
    await write(g!, 10);
    expect((await exportOf(g!)).status).toBe(200);
    await g!.close();
    g = undefined;
    await forge({ cutTail: 3 });
    await start();
    const r = await exportOf(g!);
    expect(refused(r.status, r.text)).toMatchObject({ status: 503, details: { seq: 8 } });
    expect(errors.join("\n")).toMatch(/seq 8 to 10 were verified before: they are gone/);
    expect(await g!.audited("audit.tamper_detected")).toBe(1);
  });

  test("the audit key replaced in the store (its sealed row deleted, a new key made) is a rewrite too", async () => {
    await start();
    await write(g!, 3);
    expect((await exportOf(g!)).status).toBe(200);
    await g!.close();
    g = undefined;
    await sql("DELETE FROM meta WHERE key = 'audit_key'");
    await start();
    expect((await exportOf(g!)).status).toBe(503);
    expect(errors.join("\n")).toContain("the key this gateway signed with before (replaced)");
  });

  test("a checkpoint row not signed by the audit key (inserted in the store) is a rewrite", async () => {
    await start();
    await write(g!, 5);
    expect((await exportOf(g!)).status).toBe(200);
    await write(g!, 2);
    const [r6] = await sql("SELECT hash FROM audit WHERE seq = 6");
    await sql("INSERT INTO audit_checkpoints (seq, hash, time, signature, kid) VALUES (6, ?, 0, 'AAAA', 'x')", [r6!.hash]);
    const r = await exportOf(g!);
    expect(refused(r.status, r.text)).toMatchObject({ status: 503, details: { seq: 6 } });
  });

  test("a sweep while the chain is rewritten deletes nothing: the evidence stays", async () => {
    await start();
    await write(g!, 10);
    expect((await exportOf(g!)).status).toBe(200);
    await forge({ rewrite: { seq: 2, data: { i: 9 } } });
    g!.clock.advance(3 * 24 * 3600);
    await expect(sweepOnce(g!.gw, { retentionMs: 1000, auditRetentionMs: 1000 })).rejects.toMatchObject({ code: "NOT_READY" });
    expect((await sql("SELECT COUNT(*) AS n FROM audit"))[0]!.n).toBe(11); // the ten, and the record of the rewrite
  });
});

describe("what is not a rewrite is signed as before", () => {
  test("restarts, new records and the timer's checkpoints: no alarm, every export verifies", async () => {
    await start();
    await write(g!, 7);
    expect(verifyAuditExport((await exportOf(g!)).text)).toMatchObject({ ok: true, records: 7 });
    await restart();
    await write(g!, 5);
    await g!.gw.auditChain.checkpoint();
    await restart();
    const r = await exportOf(g!);
    expect(verifyAuditExport(r.text)).toMatchObject({ ok: true, records: 12, end: { seq: 12 } });
    expect(errors).toEqual([]);
  });

  test("a sweep past the head the gateway verified last: it goes on from the sweep's signed anchor", async () => {
    await start();
    await write(g!, 30, "agent.registered");
    expect((await exportOf(g!)).status).toBe(200); // this pin: seq 30
    const stale = memoryAuditPin();
    stale.write(pin.read()!);
    g!.clock.advance(3 * 24 * 3600);
    await write(g!, 10, "token.revoked");
    const swept = await sweepOnce(g!.gw, { retentionMs: 24 * 3600 * 1000, auditRetentionMs: 2 * 24 * 3600 * 1000 });
    expect(swept.audit).toBe(30);
    // a gateway whose pin is older than the sweep's anchor (it was down): the anchor stands for the records swept
    pin = stale;
    await g!.close();
    g = undefined;
    await sql("DELETE FROM audit WHERE seq <= 30"); // (already gone: the sweep)
    await start();
    const r = await exportOf(g!);
    expect(r.status).toBe(200);
    expect(verifyAuditExport(r.text)).toMatchObject({ ok: true, range: [31, 40] });
    expect(errors).toEqual([]);
  });

  test("records appended to the store by someone else are chained on and signed: the pin guards what was verified, not what comes next", async () => {
    await start();
    await write(g!, 3);
    expect((await exportOf(g!)).status).toBe(200);
    await g!.gw.store.appendAudit({ type: "token.issued", at: g!.clock.ms, client_id: "appended" });
    expect(verifyAuditExport((await exportOf(g!)).text)).toMatchObject({ ok: true, records: 4 });
  });
});

describe("the pin file (ops/audit-pin.ts)", () => {
  test("one file per store address, credentials and options left out; written whole; a damaged one stops the start", async () => {
    expect(storeAddress("postgres://u:secret@DB.example/ath?schema=s1&sslmode=require")).toBe("postgres://db.example:5432/ath?schema=s1");
    expect(storeAddress("postgres://other:pw@db.example:5432/ath?schema=s1")).toBe("postgres://db.example:5432/ath?schema=s1");
    expect(storeAddress(`sqlite:${dbPath()}`)).toBe(`sqlite:${dbPath()}`);
    const p = fileAuditPin(dir.path, `sqlite:${dbPath()}`);
    expect(p.read()).toBeNull();
    p.write({ kid: "k", seq: 4, hash: "a".repeat(64) });
    expect(p.read()).toEqual({ kid: "k", seq: 4, hash: "a".repeat(64) });
    expect(await Bun.file(p.where).json()).toMatchObject({ store: `sqlite:${dbPath()}`, seq: 4 });
    expect(fileAuditPin(dir.path, "sqlite:/elsewhere.db").where).not.toBe(p.where);
    await Bun.write(p.where, "{not json");
    expect(() => p.read()).toThrow(/is not a pinned audit head.*remove it/);
    pin = p;
    await expect(start()).rejects.toThrow(/is not a pinned audit head/);
  });
});
