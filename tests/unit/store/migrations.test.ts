/**
 * Migration 4 (DESIGN §9): tokens issued before token_id existed get one — public, prefixed, unique — on SQLite and
 * PostgreSQL alike, and are then listed and revoked by it like any other.
 */
import { afterEach, describe, expect, test } from "bun:test";
import type { Store } from "../../../src/store/types.ts";
import { type Harness, harnessAt, PG_URL, postgresHarness, sqliteHarness, T0 } from "../../helpers/store-harness.ts";

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

let h: Harness | undefined;
afterEach(async () => {
  await h?.dispose();
  h = undefined;
});

describe("migration 4: token_id for existing tokens", () => {
  test("SQLite: a database at version 3 with tokens opens with a token_id on each", async () => {
    h = await harnessAt(sqliteHarness, "sqlite", 3, OLD_ROWS);
    await expectMigrated(await h.open());
  });

  test.skipIf(!PG_URL)("PostgreSQL: a schema at version 3 with tokens opens with a token_id on each", async () => {
    h = await harnessAt(() => postgresHarness(PG_URL), "postgres", 3, OLD_ROWS);
    await expectMigrated(await h.open());
  });
});
