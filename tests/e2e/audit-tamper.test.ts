/**
 * A store rewritten behind the gateway's back (issue 35, finding 3), through `dist/ath serve` on SQLite: with the
 * store file alone — no master key, no audit key — records are rewritten and re-chained, the checkpoints deleted and
 * the tail cut. After a restart the gateway names the rewrite loudly and signs nothing: no checkpoint, no closed export
 * (503), while the rewrite is recorded (`audit.tamper_detected`) and counted (`ath_audit_tamper_detected_total`); the
 * forger's own export fails `ath admin audit verify --key <the key pinned before>`. The head it verified is kept in
 * the data dir; removing that file is how an operator accepts the store's chain as it is.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { forgeChain, forgedExport, sqliteTables } from "../helpers/audit-forger.ts";
import { ath, ensureBinary } from "../helpers/cli-binary.ts";
import { startGateway, type Gateway } from "../helpers/gateway.ts";
import { tempDir } from "../helpers/net.ts";

let gw: Gateway;
let home: { path: string; remove: () => Promise<void> };
let keyFile: string;
let keyLine: string;
let before: string;
const PROVIDERS = 12;

const admin = (...args: string[]) => ath(home.path, ["admin", ...args, "-g", gw.baseUrl], { ATH_ADMIN_TOKEN: gw.adminToken });
const dbPath = () => join(gw.dataDir, "ath.db");
const file = (name: string, text: string) => {
  const p = join(home.path, name);
  writeFileSync(p, text);
  return p;
};
const provider = (id: string) => ({
  provider_id: id, display_name: id, available_scopes: ["read"], authorize_endpoint: "https://idp.example/authorize",
  token_endpoint: "https://idp.example/token", client_id: "cid", client_secret: "not-a-real-secret",
});

beforeAll(async () => {
  ensureBinary();
  home = await tempDir("audit-tamper");
  gw = await startGateway({ binary: true, providers: {} });
  for (let i = 0; i < PROVIDERS; i++) {
    const res = await fetch(`${gw.baseUrl}/ath/admin/providers`, {
      method: "POST",
      headers: { "x-ath-user-token": gw.adminToken, "content-type": "application/json" },
      body: JSON.stringify(provider(`p${i}`)),
    });
    expect(res.status).toBe(201);
  }
  const key = await admin("audit", "key");
  keyFile = file("pinned-key.json", key.stdout);
  // The export verifies and signs the head: from here the gateway has verified every record.
  const r = await admin("audit", "export");
  expect(r.code).toBe(0);
  before = r.stdout;
  keyLine = before.split("\n")[0]!;
  expect((await admin("audit", "verify", file("before.jsonl", before), "--key", keyFile)).code).toBe(0);
  expect(readdirSync(gw.dataDir).filter((f) => /^audit-head\.[0-9a-f]{16}\.json$/.test(f))).toHaveLength(1);
}, 120_000);
afterAll(async () => {
  await gw?.cleanup();
  await home?.remove();
});

describe("records rewritten and re-chained, checkpoints deleted, the tail cut — with the store alone", () => {
  let forgedHead: { seq: number; hash: string };
  let forged: string;

  beforeAll(async () => {
    await gw.stop();
    const t = sqliteTables(dbPath());
    try {
      forgedHead = await forgeChain(t, { rewrite: { seq: 3, data: { by: "nobody" } }, dropCheckpoints: true, cutTail: 2 });
      forged = await forgedExport(t, keyLine);
    } finally {
      await t.close();
    }
    await gw.restart();
  }, 60_000);

  test("the restarted gateway names the rewrite loudly in its log", async () => {
    await gw.waitForOutput(/AUDIT CHAIN REWRITTEN IN THE STORE at seq \d+/);
    expect(gw.output()).toContain("audit-head.");
  });

  test("it signs nothing: the export is refused (503 NOT_READY, reason audit_chain_tampered) and no checkpoint is added", async () => {
    const res = await fetch(`${gw.baseUrl}/ath/admin/audit/export`, { headers: { "x-ath-user-token": gw.adminToken } });
    expect(res.status).toBe(503);
    const body = (await res.json()) as { code: string; details: Record<string, unknown> };
    expect(body).toMatchObject({ code: "NOT_READY", details: { reason: "audit_chain_tampered" } });
    const cli = await admin("audit", "export");
    expect(cli.code).toBe(4);
    expect(cli.stderr).toContain("audit chain");
    const t = sqliteTables(dbPath());
    try {
      expect(await t.all("SELECT seq FROM audit_checkpoints")).toEqual([]);
      // the chain goes on from the forged head: the record of the rewrite is its next link, unsigned
      expect((await t.all("SELECT seq FROM audit_head"))[0]!.seq).toBe(forgedHead.seq + 1);
      expect((await t.all("SELECT type, prev_hash FROM audit WHERE seq = ?", [forgedHead.seq + 1]))[0]).toEqual({ type: "audit.tamper_detected", prev_hash: forgedHead.hash });
    } finally {
      await t.close();
    }
  });

  test("the rewrite is recorded (audit.tamper_detected) and counted (ath_audit_tamper_detected_total)", async () => {
    const events = await admin("audit", "--type", "audit.tamper_detected", "--format", "json");
    expect(events.code).toBe(0);
    const list = events.json().events as { data: { seq: number; reason: string } }[];
    expect(list).toHaveLength(1);
    expect(list[0]!.data.reason).toContain("gone");
    const metrics = await (await fetch(`${gw.baseUrl}/metrics`, { headers: { authorization: `Bearer ${gw.adminToken}` } })).text();
    expect(metrics).toMatch(/^ath_audit_tamper_detected_total 1$/m);
  });

  test("the forger's export fails verify --key with the key pinned before: truncated (no closing line only the key can sign)", async () => {
    const r = await admin("audit", "verify", file("forged.jsonl", forged), "--key", keyFile);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain("truncated");
    // the closing line of the export taken before does not sign the forged chain
    const withOldEnd = forged + before.trim().split("\n").at(-1)! + "\n";
    const old = await admin("audit", "verify", file("forged-old-end.jsonl", withOldEnd), "--key", keyFile);
    expect(old.code).toBe(1);
    expect(old.stderr).toMatch(/broken at seq \d+: the closing line at seq \d+ (follows|does not sign)/);
  });

  test("removing the pinned head (the operator's decision) makes the gateway trust and sign the store's chain again", async () => {
    await gw.stop();
    for (const f of readdirSync(gw.dataDir).filter((f) => f.startsWith("audit-head."))) rmSync(join(gw.dataDir, f));
    await gw.restart();
    const r = await admin("audit", "export");
    expect(r.code).toBe(0);
    const v = await admin("audit", "verify", file("after.jsonl", r.stdout), "--key", keyFile);
    expect(v.code).toBe(0);
    expect(v.stdout).toContain(`closed at seq ${forgedHead.seq + 1}`); // + the audit.tamper_detected record
  });
});
