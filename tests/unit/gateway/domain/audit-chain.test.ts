/**
 * The gateway's side of the audit chain (DESIGN §20), in process over HTTP: checkpoints every 1,000 records, the
 * anchor a sweep leaves (what remains still verifies), records written before the chain existed chained at start,
 * and the export endpoint's errors (JSON, never a 500).
 */
import { afterEach, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { join } from "node:path";
import { verifyAuditExport } from "../../../../src/agent/audit-verify.ts";
import { sweepOnce } from "../../../../src/gateway/ops/sweeper.ts";
import { openSqliteStore } from "../../../../src/store/sqlite.ts";
import { ADMIN_TOKEN, inProcessGateway, type InProcess } from "../../../helpers/in-process.ts";
import { tempDir } from "../../../helpers/net.ts";

let g: InProcess | undefined;
afterEach(async () => {
  await g?.close();
  g = undefined;
});

const DAY = 24 * 3600 * 1000;

async function exported(g: InProcess, query = ""): Promise<string> {
  const res = await g.fetch(`/ath/admin/audit/export${query}`, { headers: { "x-ath-user-token": ADMIN_TOKEN } });
  expect(res.status).toBe(200);
  return res.text();
}

function push(g: InProcess, n: number, type = "token.issued") {
  for (let i = 0; i < n; i++) g.gw.auditLog.push({ type, at: g.clock.ms, client_id: `c${i}`, data: { i } });
}

test("a checkpoint is signed after every 1,000 records written; the export carries them in place and verifies", async () => {
  g = await inProcessGateway();
  push(g, 2_500);
  await g.gw.auditLog.flush();
  await g.gw.auditChain.checkpoint(); // also waits for the checkpoints the writes asked for (they run one after another)
  const cps = await g.gw.store.listAuditCheckpoints({ afterSeq: 0, throughSeq: 10_000 });
  expect(cps.filter((c) => c.seq >= 1_000 && c.seq < 2_500).length).toBeGreaterThanOrEqual(2);
  expect(cps.at(-1)!.seq).toBe(2_500);
  const text = await exported(g);
  const r = verifyAuditExport(text);
  expect(r).toMatchObject({ ok: true, records: 2_500, checkpoints: cps.length, range: [1, 2_500] });
});

test("a sweep deletes old records only past a signed anchor, and what remains — exported alone — still verifies", async () => {
  g = await inProcessGateway();
  push(g, 30, "agent.registered");
  await g.gw.auditLog.flush();
  g.clock.advance(3 * 24 * 3600);
  push(g, 10, "token.revoked");
  await g.gw.auditLog.flush();
  const swept = await sweepOnce(g.gw, { retentionMs: DAY, auditRetentionMs: 2 * DAY });
  expect(swept.audit).toBe(30);
  const text = await exported(g);
  const lines = text.trim().split("\n").map((l) => JSON.parse(l));
  expect(lines[1]).toMatchObject({ type: "checkpoint", seq: 30 });
  expect(lines.at(-1)).toMatchObject({ type: "end", seq: 40, hash: lines.at(-3).hash });
  expect(lines[2]).toMatchObject({ seq: 31, type: "token.revoked", prev_hash: lines[1].hash });
  expect(verifyAuditExport(text)).toMatchObject({ ok: true, records: 10, range: [31, 40] });
  // and without the anchor line it would not
  expect(verifyAuditExport([lines[0], ...lines.slice(2)].map((l) => JSON.stringify(l)).join("\n"))).toMatchObject({ ok: false, seq: 1 });
});

test("records written before the chain existed are chained, in order, at the first start", async () => {
  const dir = await tempDir("audit-backlog");
  try {
    const path = join(dir.path, "ath.db");
    openSqliteStore(path).close();
    const raw = new Database(path);
    for (let i = 0; i < 5; i++) raw.run("INSERT INTO audit (type, at, client_id, data) VALUES (?, ?, ?, ?)", ["token.issued", 1_700_000_000_000 + i, `old${i}`, JSON.stringify({ i })]);
    raw.close();
    g = await inProcessGateway({ store: openSqliteStore(path) });
    push(g, 2, "token.revoked");
    const lines = (await exported(g)).trim().split("\n").map((l) => JSON.parse(l));
    expect(lines.slice(1, 8).map((l) => [l.seq, l.client_id ?? null])).toEqual([[1, "old0"], [2, "old1"], [3, "old2"], [4, "old3"], [5, "old4"], [6, "c0"], [7, "c1"]]);
    expect(verifyAuditExport(lines.map((l) => JSON.stringify(l)).join("\n"))).toMatchObject({ ok: true, records: 7 });
  } finally {
    await g?.close();
    g = undefined;
    await dir.remove();
  }
});

test("the export's errors are JSON: an admin token is needed, `since` must be a time, nothing else is taken", async () => {
  g = await inProcessGateway();
  expect((await g.fetch("/ath/admin/audit/export")).status).toBe(401);
  for (const q of ["?since=soon", "?limit=5", "?type=x"]) {
    const res = await g.fetch(`/ath/admin/audit/export${q}`, { headers: { "x-ath-user-token": ADMIN_TOKEN } });
    expect(res.status).toBe(400);
    expect((await res.json()).code).toBe("INVALID_REQUEST");
  }
  // an empty chain: the key line and the closing line at seq 0, which verifies — the key line alone does not
  const text = await exported(g);
  const lines = text.trim().split("\n");
  expect(lines).toHaveLength(2);
  expect(JSON.parse(lines[1]!)).toMatchObject({ type: "end", seq: 0, hash: "0".repeat(64) });
  expect(verifyAuditExport(text)).toMatchObject({ ok: true, records: 0, range: null, end: { seq: 0 } });
  expect(verifyAuditExport(lines[0]!)).toMatchObject({ ok: false, kind: "truncated" });
});
