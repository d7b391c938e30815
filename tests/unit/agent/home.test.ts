/**
 * The agent home (DESIGN.md §5): config.json and credentials.json are read with their schema and updated under a
 * lock that loses no update.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { readdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { homePaths, readConfig, readCredentials, updateConfig, updateCredentials } from "../../../src/agent/home.ts";
import { tempHome } from "../../helpers/cli-harness.ts";

let home: { dir: string; cleanup: () => Promise<void> };
beforeEach(async () => {
  home = await tempHome();
});
afterEach(() => home.cleanup());

const paths = () => homePaths({ ATH_HOME: join(home.dir, "h") });

describe("config.json and credentials.json", () => {
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

  test("missing files read as empty defaults", async () => {
    expect(await readConfig(paths())).toEqual({ gateways: {} });
    expect(await readCredentials(paths())).toEqual({ gateways: {} });
  });

  test("a file saved with a byte order mark reads as without it", async () => {
    const h = paths();
    await updateConfig(h, () => {});
    await writeFile(h.config, `\uFEFF${JSON.stringify({ gateways: { a: "http://a" } })}`);
    expect(await readConfig(h)).toEqual({ gateways: { a: "http://a" } });
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
