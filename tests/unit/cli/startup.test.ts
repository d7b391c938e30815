/**
 * Start-up: the agent commands never load the gateway or the store (only `ath serve` does, and `ath templates` for
 * the template data when it runs), so their cold start stays small and the client carries no server code paths.
 * Each command runs as its own `bun src/main.ts` process with a loader hook that records every module of
 * src/gateway/ and src/store/ it loads.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";

const REPO = join(import.meta.dir, "..", "..", "..");
let dir: string;
let preload: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "ath-startup-"));
  preload = join(dir, "record-loads.ts");
  await writeFile(
    preload,
    `import { appendFileSync } from "node:fs";
Bun.plugin({
  name: "record-loads",
  setup(build) {
    build.onLoad({ filter: /\\/src\\/(gateway|store)\\// }, (args) => {
      appendFileSync(process.env.LOADS_FILE, args.path + "\\n");
      return undefined;
    });
  },
});
`,
  );
});
afterAll(() => rm(dir, { recursive: true, force: true }));

/** The gateway and store modules `ath argv` loaded. */
async function loads(argv: string[]): Promise<string[]> {
  const file = join(dir, `loads-${crypto.randomUUID()}.txt`);
  await writeFile(file, "");
  const p = Bun.spawnSync([process.execPath, "--preload", preload, join(REPO, "src/main.ts"), ...argv], {
    env: { ...process.env, ATH_HOME: join(dir, "home"), LOADS_FILE: file, ATH_HTTP_TIMEOUT_MS: "2000" },
    stdout: "pipe",
    stderr: "pipe",
  });
  expect(p.stderr.toString()).not.toContain("record-loads");
  return (await readFile(file, "utf8")).split("\n").filter(Boolean).map((f) => f.slice(REPO.length + 1));
}

describe("which modules a command loads", () => {
  test("no agent command loads src/gateway/ or src/store/, whatever its outcome", async () => {
    const down = "http://127.0.0.1:9"; // nothing listens: the commands that call out fail fast with exit 5
    for (const argv of [
      ["--version"],
      ["--help"],
      ["templates", "--help"],
      ["config", "init"],
      ["config", "show"],
      ["identity"],
      ["status", "--format", "json"],
      ["discover", "-g", down],
      ["register", "-g", down, "--provider", "github"],
      ["authorize", "-g", down, "--provider", "github", "--no-wait"],
      ["token", "-g", down, "--code", "ath_code_x"],
      ["proxy", "-g", down, "github", "GET", "/"],
      ["revoke", "-g", down, "--all"],
    ]) {
      expect({ argv, loaded: await loads(argv) }).toEqual({ argv, loaded: [] });
    }
  });

  test("ath serve does load them (the hook sees what it should)", async () => {
    const loaded = await loads(["serve", "--port", "0", "--providers", join(dir, "missing.json")]);
    expect(loaded.filter((f) => f.startsWith("src/gateway/")).length).toBeGreaterThan(0);
  });
});
