/** The SQLite store shared by several gateway processes on one file (WAL, busy timeout, atomic statements). */
import { describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openSqliteStore } from "../../../src/store/index.ts";
import { agentFixture, sessionFixture } from "../../helpers/store-harness.ts";

describe("SQLite shared by several processes", () => {
  test("each jti is recorded once and the session consumed once across 6 processes", async () => {
    const dir = mkdtempSync(join(tmpdir(), "ath-procs-"));
    try {
      const path = join(dir, "ath.db");
      const setup = openSqliteStore(path);
      const a = agentFixture();
      await setup.createAgent(a);
      const s = sessionFixture(a, { status: "consented", expires_at: 10 });
      await setup.createSession(s);
      await setup.close();
      const worker = join(import.meta.dir, "../../helpers/store-worker.ts");
      const procs = Array.from({ length: 6 }, () =>
        Bun.spawn([process.execPath, worker, path, s.session_id, a.client_id, "1000"], { stdout: "pipe", stderr: "inherit" }),
      );
      const results = (await Promise.all(procs.map((p) => new Response(p.stdout).text()))).map(
        (out) => JSON.parse(out) as { recorded: number; errors: number; consumed: boolean },
      );
      expect(results.reduce((n, r) => n + r.recorded, 0)).toBe(1000);
      expect(results.reduce((n, r) => n + r.errors, 0)).toBe(0);
      expect(results.filter((r) => r.consumed)).toHaveLength(1);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
