/**
 * scripts/build.ts's build key, by which the tests tell a current `dist/ath` from a stale one
 * (tests/helpers/cli-binary.ts): the same tree gives the same key; any byte of src/, a new file there, a manifest or
 * another commit gives another.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildKey } from "../../scripts/build.ts";

let root: string;
const git = (...args: string[]) => {
  const r = Bun.spawnSync(["git", "-c", "user.name=t", "-c", "user.email=t@t", ...args], { cwd: root, stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`git ${args.join(" ")}: ${r.stderr.toString()}`);
};

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "ath-build-key-"));
  await mkdir(join(root, "src", "cli"), { recursive: true });
  await writeFile(join(root, "src", "main.ts"), "export {};\n");
  await writeFile(join(root, "src", "cli", "run.ts"), "export const run = 1;\n");
  await writeFile(join(root, "package.json"), "{}\n");
  git("init", "-q");
  git("add", ".");
  git("commit", "-qm", "one");
});
afterAll(() => rm(root, { recursive: true, force: true }));

describe("the build key", () => {
  test("is the same for the same tree, and another after any byte of src/ changes; back again when it is undone", async () => {
    const clean = buildKey(root);
    expect(buildKey(root)).toBe(clean);
    await writeFile(join(root, "src", "cli", "run.ts"), "export const run = 2;\n");
    const edited = buildKey(root);
    expect(edited).not.toBe(clean);
    await writeFile(join(root, "src", "cli", "run.ts"), "export const run = 1;\n");
    expect(buildKey(root)).toBe(clean);
  });

  test("changes with a new file under src/, with a manifest, and with the commit", async () => {
    const before = buildKey(root);
    await writeFile(join(root, "src", "new.ts"), "export {};\n");
    const added = buildKey(root);
    expect(added).not.toBe(before);
    await writeFile(join(root, "package.json"), '{"dependencies":{"zod":"4"}}\n');
    const manifest = buildKey(root);
    expect(manifest).not.toBe(added);
    git("add", ".");
    git("commit", "-qm", "two");
    expect(buildKey(root)).not.toBe(manifest); // same bytes, but `ath --version` now names another commit
  });
});
