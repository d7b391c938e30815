/**
 * Migration 4 (DESIGN §9): tokens issued before token_id existed get one — public, prefixed, unique — on SQLite and
 * PostgreSQL alike, and are then listed and revoked by it like any other.
 */
import { Database } from "bun:sqlite";
import { SQL } from "bun";
import { afterEach, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { META_TABLE, migrations } from "../../../src/store/migrations.ts";
import { openPostgresStore } from "../../../src/store/postgres.ts";
import { openSqliteStore } from "../../../src/store/sqlite.ts";
import type { Store } from "../../../src/store/types.ts";
import { PG_URL, T0 } from "../../helpers/store-harness.ts";

const OLD_ROWS = [
  `INSERT INTO agents (client_id, client_secret_hash, agent_id, developer, status, approvals, approval_expires, created_at)
     VALUES ('ath_c1', 'h', 'https://a.example/1', '{"name":"d","id":"d"}', 'approved', '[]', ${T0 + 1e9}, ${T0})`,
  `INSERT INTO tokens (token_hash, client_id, agent_id, user_id, provider_id, scopes, created_at, expires_at)
     VALUES ('hash-1', 'ath_c1', 'https://a.example/1', 'u1', 'demo', '["notes:read"]', ${T0}, ${T0 + 3_600_000})`,
  `INSERT INTO tokens (token_hash, client_id, agent_id, user_id, provider_id, scopes, created_at, expires_at)
     VALUES ('hash-2', 'ath_c1', 'https://a.example/1', 'u2', 'demo', '["notes:read"]', ${T0 + 1}, ${T0 + 3_600_000})`,
];

async function expectMigrated(store: Store) {
  const a = await store.getToken("hash-1");
  const b = await store.getToken("hash-2");
  expect(a!.token_id).toMatch(/^ath_tkid_[0-9a-f]{32}$/);
  expect(b!.token_id).toMatch(/^ath_tkid_[0-9a-f]{32}$/);
  expect(a!.token_id).not.toBe(b!.token_id);
  const listed = await store.listTokens({ token_id: a!.token_id }, { now: T0, limit: 10 });
  expect(listed.map((t) => t.token_hash)).toEqual(["hash-1"]);
  expect((await store.revokeTokensWhere({ token_id: b!.token_id }, T0 + 5)).map((t) => t.token_hash)).toEqual(["hash-2"]);
}

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c();
});

describe("migration 4: token_id for existing tokens", () => {
  test("SQLite: a database at version 3 with tokens opens with a token_id on each", async () => {
    const dir = mkdtempSync(join(tmpdir(), "ath-mig-"));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const path = join(dir, "ath.db");
    const db = new Database(path, { create: true });
    db.exec(META_TABLE);
    for (const m of migrations("sqlite").slice(0, 3)) db.exec(m);
    db.exec("INSERT INTO meta (key, value) VALUES ('schema_version', '3')");
    for (const r of OLD_ROWS) db.exec(r);
    db.close();
    const store = openSqliteStore(path);
    cleanups.unshift(() => store.close());
    await expectMigrated(store);
  });

  test.skipIf(!PG_URL)("PostgreSQL: a schema at version 3 with tokens opens with a token_id on each", async () => {
    const schema = `ath_test_${crypto.randomUUID().replaceAll("-", "")}`;
    const sql = new SQL(PG_URL, { max: 1 });
    cleanups.push(async () => {
      await sql.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await sql.close();
    });
    await sql.begin(async (tx) => {
      await tx.unsafe(`CREATE SCHEMA "${schema}"; SET LOCAL search_path TO "${schema}"`);
      await tx.unsafe(META_TABLE);
      for (const m of migrations("postgres").slice(0, 3)) await tx.unsafe(m);
      await tx.unsafe("INSERT INTO meta (key, value) VALUES ('schema_version', '3')");
      for (const r of OLD_ROWS) await tx.unsafe(r);
    });
    const store = await openPostgresStore(PG_URL, { schema, max: 2 });
    cleanups.unshift(() => store.close());
    await expectMigrated(store);
  });
});
