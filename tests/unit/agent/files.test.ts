/**
 * The home directory's files under stress: many waiters breaking one stale lock still let one writer in at a
 * time, a holder removes only its own lock, `register` never registers when it could not save the secret, and an
 * existing ATH_HOME others can enter is tightened to 0700.
 */
import { describe, expect, test } from "bun:test";
import { chmod, readFile, readdir, stat, utimes, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { withLock } from "../../../src/agent/files.ts";
import { GW, fakeGateway, runAth, tempHome, type FakeGateway, cliFixture } from "../../helpers/cli-harness.ts";

const fx = cliFixture();

async function staleLock(file: string): Promise<void> {
  await writeFile(`${file}.lock`, "12345.crashed");
  const old = new Date(Date.now() - 60_000);
  await utimes(`${file}.lock`, old, old);
}

describe("the lock file", () => {
  test("a stale lock broken by eight waiters at once still admits one holder at a time (20 rounds)", async () => {
    for (let round = 0; round < 20; round++) {
      const file = join(fx.home.dir, `c${round}.json`);
      await writeFile(file, "0");
      await staleLock(file);
      let inside = 0;
      let most = 0;
      await Promise.all(
        Array.from({ length: 8 }, () =>
          withLock(file, async () => {
            most = Math.max(most, ++inside);
            const n = Number(await readFile(file, "utf8"));
            await Bun.sleep(2);
            await writeFile(file, String(n + 1));
            inside--;
          }),
        ),
      );
      expect({ round, count: Number(await readFile(file, "utf8")), most }).toEqual({ round, count: 8, most: 1 });
    }
    // Nothing is left behind: no lock, no breaker guard, no moved-aside file.
    expect((await readdir(fx.home.dir)).filter((n) => !/^c\d+\.json$/.test(n))).toEqual([]);
  });

  test("a holder whose lock was taken over (it outlived the stale limit) leaves the new holder's lock in place", async () => {
    const file = join(fx.home.dir, "c.json");
    await withLock(file, async () => {
      // Another process broke this lock as stale and holds its own now.
      await writeFile(`${file}.lock`, "999.other");
    });
    expect(await readFile(`${file}.lock`, "utf8")).toBe("999.other");
  });
});

describe("register", () => {
  test("with an unreadable credentials.json it does not register at the gateway (the client secret would be lost)", async () => {
    for (const text of ['{"gateways": {', '{"gateways": 5}']) {
      await writeFile(join(fx.home.dir, "credentials.json"), text, { mode: 0o600 });
      const r = await runAth(fx.home.dir, ["register", "-g", GW, "--provider", "github", "--scopes", "repo", "--format", "json"], { fetch: fx.gw.fetch });
      expect(r.code).toBe(1);
      expect(JSON.parse(r.stdout).error.message).toContain(join(fx.home.dir, "credentials.json"));
      expect(fx.gw.requests.map((q) => q.path)).not.toContain("/ath/agents/register");
      expect(await readFile(join(fx.home.dir, "credentials.json"), "utf8")).toBe(text);
    }
  });
});

describe("ATH_HOME", () => {
  test("an existing home others can enter (0755) is tightened to 0700 on the next write", async () => {
    await chmod(fx.home.dir, 0o755);
    const r = await runAth(fx.home.dir, ["config", "set-gateway", "local", GW]);
    expect(r.code).toBe(0);
    expect((await stat(fx.home.dir)).mode & 0o777).toBe(0o700);
  });
});
