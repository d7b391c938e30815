/**
 * Private files that survive parallel writers: an atomic write leaves a 0600 file in a 0700 directory and no temp
 * file; a stale lock is broken and a fresh one waited for; many waiters breaking one stale lock still let one
 * writer in at a time, and a holder removes only its own lock.
 */
import { describe, expect, test } from "bun:test";
import { readFile, readdir, stat, utimes, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { STALE_LOCK_MS, withLock, writeFileAtomic } from "../../../src/agent/files.ts";
import { homeFixture } from "../../helpers/cli-harness.ts";

const fx = homeFixture();

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

describe("atomic writes and the lock", () => {
  test("an atomic write leaves a 0600 file, a 0700 directory and no temp file", async () => {
    const file = join(fx.home.dir, "sub", "x.json");
    await writeFileAtomic(file, "{}");
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect((await stat(join(fx.home.dir, "sub"))).mode & 0o777).toBe(0o700);
    expect(await readdir(join(fx.home.dir, "sub"))).toEqual(["x.json"]);
  });

  test("a stale lock left by a crashed process is broken; a fresh one is waited for", async () => {
    const file = join(fx.home.dir, "y.json");
    await writeFile(`${file}.lock`, "99999");
    const old = (Date.now() - STALE_LOCK_MS - 1000) / 1000;
    await utimes(`${file}.lock`, old, old);
    expect(await withLock(file, async () => "ran")).toBe("ran");

    await writeFile(`${file}.lock`, "99999");
    let ran = false;
    const waiting = withLock(file, async () => (ran = true));
    await Bun.sleep(30);
    expect(ran).toBe(false);
    await Bun.file(`${file}.lock`).delete();
    await waiting;
    expect(ran).toBe(true);
  });
});
