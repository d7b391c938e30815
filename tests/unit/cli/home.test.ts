/**
 * The agent's home directory under hostile conditions: a permissive umask still gives 0700 directories and 0600
 * files, an existing home others can enter is tightened to 0700, and a corrupted credentials.json stops every
 * command that reads it with the file named, exit 1 and one JSON error document, while the file itself is left
 * exactly as it was (no silent reset, no lost secrets).
 */
import { describe, expect, test } from "bun:test";
import { chmod, readFile, readdir, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { runAth } from "../../helpers/cli-harness.ts";
import { GATEWAY as GW, cliOnGateway } from "../../helpers/cli-in-process.ts";

const fx = cliOnGateway();
const ath = fx.ath;

async function modes(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const name of await readdir(dir, { recursive: true })) {
    out[name] = ((await stat(join(dir, name))).mode & 0o777).toString(8);
  }
  return out;
}

describe("ATH_HOME file modes", () => {
  test("with umask 000 every directory is 0700 and every file 0600, the nested home included", async () => {
    const previous = process.umask(0);
    try {
      const nested = join(fx.home.dir, "a", "b");
      const run = (argv: string[]) => runAth(nested, argv, { fetch: fx.fetch as never });
      expect((await run(["config", "set-gateway", "local", GW])).code).toBe(0);
      expect((await run(["register", "--provider", "demo", "--scopes", "notes:read"])).code).toBe(0);
      const a = await run(["authorize", "--provider", "demo", "--no-wait", "--format", "json"]);
      expect(a.code).toBe(0);
      expect((await run(["token", "--code", await fx.consent(JSON.parse(a.stdout).authorization_url)])).code).toBe(0);
      expect(await modes(fx.home.dir)).toEqual({
        a: "700",
        "a/b": "700",
        "a/b/config.json": "600",
        "a/b/credentials.json": "600",
        "a/b/keys": "700",
        "a/b/keys/agent.pem": "600",
      });
    } finally {
      process.umask(previous);
    }
  });
});

describe("a corrupted credentials.json", () => {
  const corrupt = ['{"gateways": {', "[]", "null", '{"gateways":{"x":{"agents":{"a":{"client_id":1}}}}}'];
  const commands = [
    ["status"],
    ["authorize", "-g", GW, "--provider", "demo", "--no-wait"],
    ["token", "-g", GW, "--code", "ath_code_1"],
    ["proxy", "demo", "GET", "/notes", "-g", GW],
    ["revoke", "-g", GW, "--all"],
  ];
  for (const text of corrupt) {
    test(`${JSON.stringify(text).slice(0, 40)}: every reader exits 1 naming the file, and the file is untouched`, async () => {
      const file = join(fx.home.dir, "credentials.json");
      await writeFile(file, text, { mode: 0o600 });
      for (const argv of commands) {
        const r = await ath([...argv, "--format", "json"]);
        expect(r.code).toBe(1);
        const doc = JSON.parse(r.stdout);
        expect(doc.error.code).toBe("ERROR");
        expect(doc.error.message).toContain(file);
        expect(doc.error.message).not.toContain("\n");
        expect(await readFile(file, "utf8")).toBe(text);
      }
      expect(fx.sent.filter((q) => q.path !== "/.well-known/ath.json")).toEqual([]);
    });
  }
});

describe("ATH_HOME", () => {
  test("an existing home others can enter (0755) is tightened to 0700 on the next write", async () => {
    await chmod(fx.home.dir, 0o755);
    const r = await runAth(fx.home.dir, ["config", "set-gateway", "local", GW]);
    expect(r.code).toBe(0);
    expect((await stat(fx.home.dir)).mode & 0o777).toBe(0o700);
  });
});
