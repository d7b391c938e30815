/** The agent home (DESIGN.md §5): 0600 files in a 0700 directory, atomic writes, a lock that loses no update. */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { readdir, stat, utimes, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { STALE_LOCK_MS, withLock, writeFileAtomic } from "../../../src/agent/files.ts";
import { homePaths, readConfig, readCredentials, updateConfig, updateCredentials } from "../../../src/agent/home.ts";
import { tempHome } from "../../helpers/cli-harness.ts";

let home: { dir: string; cleanup: () => Promise<void> };
beforeEach(async () => {
  home = await tempHome();
});
afterEach(() => home.cleanup());

const paths = () => homePaths({ ATH_HOME: join(home.dir, "h") });

describe("files", () => {
  test("an atomic write leaves a 0600 file, a 0700 directory and no temp file", async () => {
    const file = join(home.dir, "sub", "x.json");
    await writeFileAtomic(file, "{}");
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect((await stat(join(home.dir, "sub"))).mode & 0o777).toBe(0o700);
    expect(await readdir(join(home.dir, "sub"))).toEqual(["x.json"]);
  });

  test("100 concurrent locked read-modify-writes lose no entry", async () => {
    const h = paths();
    await Promise.all(
      Array.from({ length: 100 }, (_, i) =>
        updateCredentials(h, (c) => {
          c.gateways[`http://127.0.0.1:${9000 + i}`] = { agents: {} };
        }),
      ),
    );
    expect(Object.keys((await readCredentials(h)).gateways)).toHaveLength(100);
    expect((await readdir(h.dir)).sort()).toEqual(["credentials.json"]);
  });

  test("a stale lock left by a crashed process is broken; a fresh one is waited for", async () => {
    const file = join(home.dir, "y.json");
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

describe("config.json and credentials.json", () => {
  test("missing files read as empty defaults", async () => {
    expect(await readConfig(paths())).toEqual({ gateways: {} });
    expect(await readCredentials(paths())).toEqual({ gateways: {} });
  });

  test("an invalid file is reported with its path and the bad field, not overwritten", async () => {
    const h = paths();
    await updateConfig(h, () => {});
    await writeFile(h.config, JSON.stringify({ gateways: { a: 1 } }));
    await expect(readConfig(h)).rejects.toThrow(`${h.config} is invalid: gateways.a:`);
    await writeFile(h.config, "{not json");
    await expect(updateConfig(h, () => {})).rejects.toThrow("is not valid JSON");
    expect(await Bun.file(h.config).text()).toBe("{not json");
  });
});
