/** openStore: the store spec of `--db` (sqlite:PATH, a bare path, postgres://…) and what it refuses. */
import { describe, expect, test } from "bun:test";
import { SQL } from "bun";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openStore } from "../../../src/store/index.ts";
import { PG_URL } from "../../helpers/store-harness.ts";

describe("openStore", () => {
  test("a sqlite: spec and a bare path both open the same SQLite file", async () => {
    const dir = mkdtempSync(join(tmpdir(), "ath-open-"));
    try {
      const path = join(dir, "nested", "ath.db");
      const first = await openStore(`sqlite:${path}`);
      expect(first.kind).toBe("sqlite");
      await first.setMeta("k", "v");
      await first.close();
      const second = await openStore(path);
      expect(await second.getMeta("k")).toBe("v");
      await second.close();
      expect(statSync(path).mode & 0o777).toBe(0o600);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test.skipIf(!PG_URL)("a postgres:// spec opens PostgreSQL, with ?schema= naming the schema", async () => {
    const schema = `ath_test_${crypto.randomUUID().replaceAll("-", "")}`;
    const url = new URL(PG_URL);
    url.searchParams.set("schema", schema);
    const admin = new SQL(PG_URL, { max: 1 });
    try {
      const s = await openStore(url.toString());
      expect(s.kind).toBe("postgres");
      await s.close();
      const [row] = await admin`SELECT count(*)::int AS n FROM information_schema.tables WHERE table_schema = ${schema}`;
      expect(row.n).toBeGreaterThan(0);
    } finally {
      await admin.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await admin.close();
    }
  });

  test("an unknown scheme is refused without echoing the rest of the spec", async () => {
    const err = await openStore("mysql://root:hunter2@127.0.0.1/ath").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TypeError);
    expect(String(err)).toContain('unsupported store "mysql"');
    expect(String(err)).not.toContain("hunter2");
  });
});
