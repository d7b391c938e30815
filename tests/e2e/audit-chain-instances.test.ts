/**
 * One audit chain per store (DESIGN §20): two `ath serve` instances on one PostgreSQL schema, written to at once,
 * never fork it — every record has its own seq, each links to the one before — and either instance's export verifies
 * under the one audit key they share (the first instance's, sealed under the common master key). A rewrite of the
 * shared store is refused by both: each keeps the head it verified in its own data dir (ops/audit-pin.ts).
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { readdirSync } from "node:fs";
import { verifyAuditExport } from "../../src/agent/audit-verify.ts";
import { forgeChain, postgresTables } from "../helpers/audit-forger.ts";
import { startPostgresPair, type PostgresPair } from "../helpers/postgres-pair.ts";
import { PG_URL } from "../helpers/store-harness.ts";

let pair: PostgresPair;
beforeAll(async () => {
  pair = await startPostgresPair();
}, 120_000);
afterAll(async () => {
  await pair?.stop();
});

const provider = (id: string) => ({
  provider_id: id, display_name: id, available_scopes: ["read"], authorize_endpoint: "https://idp.example/authorize",
  token_endpoint: "https://idp.example/token", client_id: "cid", client_secret: "not-a-real-secret",
});

async function exportFrom(base: string, token: string): Promise<string> {
  const res = await fetch(`${base}/ath/admin/audit/export`, { headers: { "x-ath-user-token": token } });
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toBe("application/x-ndjson");
  return res.text();
}

test("two instances writing at once: one chain, no fork; both exports verify under one key", async () => {
  const { a, b } = pair;
  const N = 40;
  const writes = Array.from({ length: 2 * N }, (_, i) => {
    const gw = i % 2 === 0 ? a : b;
    return fetch(`${gw.baseUrl}/ath/admin/providers`, {
      method: "POST",
      headers: { "x-ath-user-token": gw.adminToken, "content-type": "application/json" },
      body: JSON.stringify(provider(`p${i}`)),
    }).then((r) => r.status);
  });
  expect(new Set(await Promise.all(writes))).toEqual(new Set([201]));
  // Each export first writes its own instance's queued events: A's, then B's (so B's export holds everything).
  const fromA = await exportFrom(a.baseUrl, a.adminToken);
  const fromB = await exportFrom(b.baseUrl, b.adminToken);
  for (const text of [fromA, fromB]) {
    const r = verifyAuditExport(text);
    if (!r.ok) throw new Error(`export does not verify: ${JSON.stringify(r)}`);
  }
  const keyA = JSON.parse(fromA.split("\n")[0]!).jwk;
  expect(JSON.parse(fromB.split("\n")[0]!).jwk).toEqual(keyA);
  const records = fromB.trim().split("\n").map((l) => JSON.parse(l)).filter((l) => l.type !== "key" && l.type !== "checkpoint" && l.type !== "end");
  const created = records.filter((r) => r.type === "provider.created").map((r) => r.provider_id).sort();
  expect(created).toEqual(Array.from({ length: 2 * N }, (_, i) => `p${i}`).sort());
  expect(records.map((r) => r.seq)).toEqual(records.map((_, i) => i + 1));
  // the key each publishes is that one too
  for (const gw of [a, b]) expect(await (await fetch(`${gw.baseUrl}/.well-known/ath-audit-key`)).json()).toEqual(keyA);
}, 120_000);

test("a rewrite of the shared store is refused by every instance: each walks the chain from its own verified head", async () => {
  const { a, b } = pair;
  // both have verified (and pinned) the chain through its head
  await exportFrom(a.baseUrl, a.adminToken);
  await exportFrom(b.baseUrl, b.adminToken);
  const t = postgresTables(PG_URL, pair.schema);
  try {
    await forgeChain(t, { rewrite: { seq: 5, data: { rewritten: true } }, dropCheckpoints: true });
  } finally {
    await t.close();
  }
  for (const gw of [a, b]) {
    const res = await fetch(`${gw.baseUrl}/ath/admin/audit/export`, { headers: { "x-ath-user-token": gw.adminToken } });
    expect(res.status).toBe(503);
    expect(await res.json()).toMatchObject({ code: "NOT_READY", details: { reason: "audit_chain_tampered" } });
    await gw.waitForOutput(/AUDIT CHAIN REWRITTEN IN THE STORE at seq \d+/);
  }
  // each instance pinned its own head, in its own data dir
  for (const gw of [a, b]) expect(readdirSync(gw.dataDir).filter((f) => f.startsWith("audit-head."))).toHaveLength(1);
}, 120_000);
