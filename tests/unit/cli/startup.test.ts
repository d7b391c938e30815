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
    `import { appendFileSync, readFileSync } from "node:fs";
Bun.plugin({
  name: "record-loads",
  setup(build) {
    // Every module of ours and of node_modules, recorded as it loads (and loaded as it would be).
    build.onLoad({ filter: /\\/(src|node_modules)\\/.*\\.(ts|js|mjs|cjs)$/ }, (args) => {
      appendFileSync(process.env.LOADS_FILE, args.path + "\\n");
      return { contents: readFileSync(args.path, "utf8"), loader: args.path.endsWith(".ts") ? "ts" : "js" };
    });
  },
});
`,
  );
});
afterAll(() => rm(dir, { recursive: true, force: true }));

/** The modules (of src/ and node_modules/) `ath argv` loaded, repo-relative, and what it printed. */
async function run(argv: string[]): Promise<{ loaded: string[]; stdout: string }> {
  const file = join(dir, `loads-${crypto.randomUUID()}.txt`);
  await writeFile(file, "");
  const p = Bun.spawnSync([process.execPath, "--preload", preload, join(REPO, "src/main.ts"), ...argv], {
    env: { ...process.env, ATH_HOME: join(dir, "home"), LOADS_FILE: file, ATH_HTTP_TIMEOUT_MS: "2000" },
    stdout: "pipe",
    stderr: "pipe",
  });
  expect(p.stderr.toString()).not.toContain("record-loads");
  const loaded = (await readFile(file, "utf8")).split("\n").filter(Boolean).map(repoRelative);
  return { loaded, stdout: p.stdout.toString() };
}

/** A loaded path, repo-relative; node_modules/ reached through a symlink (a git worktree's) is named as if it were here. */
function repoRelative(f: string): string {
  const nm = f.indexOf("/node_modules/");
  return nm >= 0 ? f.slice(nm + 1) : f.slice(REPO.length + 1);
}

/** The gateway and store modules `ath argv` loaded. */
async function loads(argv: string[]): Promise<string[]> {
  return (await run(argv)).loaded.filter((f) => f.startsWith("src/gateway/") || f.startsWith("src/store/"));
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

  test("ath --version loads nothing but its entry and the flag reader: no library, no command", async () => {
    for (const argv of [["--version"], ["-v", "--format", "json"]]) {
      const { loaded, stdout } = await run(argv);
      expect(stdout).toBe(argv.includes("json") ? `{"version":"0.1.0","commit":"source","target":"source"}\n` : "0.1.0 (commit source, source)\n");
      expect(loaded.filter((f) => f.startsWith("node_modules/"))).toEqual([]);
      expect(loaded.every((f) => ["src/main.ts", "src/build.ts", "src/cli/kit/flags.ts", "src/cli/kit/errors.ts", "src/agent/errors.ts", "src/text/suggest.ts"].includes(f))).toBe(true);
    }
  });

  test("only ath mcp loads the MCP SDK: no other command, nor its own --help, carries it", async () => {
    const sdk = (loaded: string[]) => loaded.filter((f) => f.startsWith("node_modules/@modelcontextprotocol/"));
    for (const argv of [["--version"], ["--help"], ["mcp", "--help"], ["status", "--format", "json"], ["proxy", "-g", "http://127.0.0.1:9", "github", "GET", "/"]]) {
      expect({ argv, sdk: sdk((await run(argv)).loaded) }).toEqual({ argv, sdk: [] });
    }
    // stdin is closed at once: the server starts, sees the end of its input and stops
    const mcp = await run(["mcp", "-g", "http://127.0.0.1:9"]);
    expect(sdk(mcp.loaded).some((f) => f.startsWith("node_modules/@modelcontextprotocol/server/dist/"))).toBe(true);
    expect(mcp.loaded.filter((f) => f.startsWith("src/gateway/") || f.startsWith("src/store/"))).toEqual([]);
    expect(mcp.stdout).toBe("");
  });

  test("ath serve does load them (the hook sees what it should)", async () => {
    const loaded = await loads(["serve", "--port", "0", "--providers", join(dir, "missing.json")]);
    expect(loaded.filter((f) => f.startsWith("src/gateway/")).length).toBeGreaterThan(0);
  });
});
