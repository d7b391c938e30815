/**
 * The agent key when something is wrong with it: a configured or default key that cannot be used is exit 3
 * BAD_KEY naming the file and the way out, `--key` is a usage error, `status` still shows what it can, a bad
 * `config init --key` is never saved, and key files others can read are fixed (ours) or warned about (yours).
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { chmod, mkdir, readFile, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { runAth, tempHome } from "../../helpers/cli-harness.ts";

let home: { dir: string; cleanup: () => Promise<void> };
beforeEach(async () => {
  home = await tempHome();
});
afterEach(() => home.cleanup());

const ath = (argv: string[]) => runAth(home.dir, argv);
const defaultKey = () => join(home.dir, "keys", "agent.pem");

async function corruptDefaultKey(text: string): Promise<void> {
  await mkdir(join(home.dir, "keys"), { recursive: true });
  await writeFile(defaultKey(), text, { mode: 0o600 });
}

describe("a default key that cannot be used", () => {
  const bad: [string, string][] = [["garbage", "garbage"], ["an empty file", ""], ["a certificate", "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"]];
  for (const [what, text] of bad) {
    test(`${what}: exit 3 BAD_KEY naming the file and the way out; it is left untouched`, async () => {
      await corruptDefaultKey(text);
      for (const format of ["json", "text"]) {
        const r = await ath(["identity", "--format", format]);
        expect(r.code).toBe(3);
        const message = format === "json" ? JSON.parse(r.stdout).error.message : r.stderr;
        if (format === "json") expect(JSON.parse(r.stdout).error).toMatchObject({ code: "BAD_KEY", details: { key_path: defaultKey() } });
        expect(message).toContain(defaultKey());
        expect(message).toContain("move it away");
        expect(message).toContain("new identity");
      }
      expect(await readFile(defaultKey(), "utf8")).toBe(text);
    });
  }

  test("status still shows the home, gateways and the key's problem (exit 0)", async () => {
    await corruptDefaultKey("garbage");
    expect((await ath(["config", "set-gateway", "local", "http://127.0.0.1:8787"])).code).toBe(0);
    const r = await ath(["status", "--format", "json"]);
    expect(r.code).toBe(0);
    const doc = JSON.parse(r.stdout);
    expect(doc.gateways).toEqual({ local: "http://127.0.0.1:8787" });
    expect(doc.identity).toMatchObject({ agent_id: null, key_path: defaultKey(), key_exists: true });
    expect(doc.identity.key_error).toContain(defaultKey());
    const text = await ath(["status"]);
    expect(text.code).toBe(0);
    expect(text.stdout).toContain("key_error\t");
  });
});

describe("a configured key_path", () => {
  test("bad content or unreadable: exit 3 BAD_KEY naming it and `ath config set key-path`", async () => {
    const bad = join(home.dir, "bad.pem");
    await writeFile(bad, "not a key");
    for (const path of [bad, join(home.dir, "missing.pem")]) {
      await writeFile(join(home.dir, "config.json"), JSON.stringify({ key_path: path }));
      const r = await ath(["identity", "--format", "json"]);
      expect(r.code).toBe(3);
      const { error } = JSON.parse(r.stdout);
      expect(error.code).toBe("BAD_KEY");
      expect(error.message).toContain(path);
      expect(error.message).toContain("ath config set key-path");
    }
  });

  test("--key with bad content or a missing file stays a usage error (exit 2) naming it", async () => {
    const bad = join(home.dir, "bad.pem");
    await writeFile(bad, "not a key");
    for (const path of [bad, join(home.dir, "missing.pem")]) {
      const r = await ath(["identity", "--key", path, "--format", "json"]);
      expect(r.code).toBe(2);
      expect(JSON.parse(r.stdout).error.message).toContain(`--key ${path}`);
    }
  });
});

describe("config init --key", () => {
  test("a key that cannot be read or used is refused before config.json is written", async () => {
    const bad = join(home.dir, "bad.pem");
    await writeFile(bad, "not a key");
    for (const path of ["/nonexistent/agent.pem", bad]) {
      const r = await ath(["config", "init", "--key", path, "--agent-id", "https://agent.example/a", "--format", "json"]);
      expect(r.code).toBe(2);
      expect(JSON.parse(r.stdout).error.message).toContain(path);
      const text = await readFile(join(home.dir, "config.json"), "utf8").catch(() => "{}");
      expect(JSON.parse(text).key_path).toBeUndefined();
      expect(JSON.parse(text).agent_id).toBeUndefined();
    }
  });
});

describe("key file modes", () => {
  test("the default key widened to 0644 is made 0600 again on use", async () => {
    expect((await ath(["config", "init"])).code).toBe(0);
    await chmod(defaultKey(), 0o644);
    expect((await ath(["identity"])).code).toBe(0);
    expect((await stat(defaultKey())).mode & 0o777).toBe(0o600);
  });

  test("a --key others can read is used, left as it is, and warned about on stderr", async () => {
    expect((await ath(["config", "init"])).code).toBe(0);
    const mine = join(home.dir, "mine.pem");
    await writeFile(mine, await readFile(defaultKey(), "utf8"), { mode: 0o644 });
    await chmod(mine, 0o644);
    const r = await ath(["identity", "--key", mine, "--format", "json"]);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout).agent_id).toMatch(/^did:key:/);
    expect(r.stderr).toContain(`chmod 600 ${mine}`);
    expect((await stat(mine)).mode & 0o777).toBe(0o644);
  });
});
