/**
 * The README's install section as a newcomer meets it (issue 40): what works from a clone runs as written and puts
 * `ath` on PATH; the published channels' install-script line exits non-zero when the script or the release is not
 * there (`curl … | sh` exited 0), and installs nothing; a script cut short in transfer runs nothing; and the fallback
 * the README gives until a release is published — install.sh from your own release build — installs a working `ath`.
 * The network is local: a Bun.serve standing in for the script's host and the release's.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, readdirSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { tempDir } from "../helpers/net.ts";
import { ATH_BIN, REPO, run } from "../helpers/processes.ts";
import { sectionOf, shellLines } from "../helpers/readme.ts";

let section = "";
let host: ReturnType<typeof Bun.serve>;
let script = "";
const cleanups: (() => Promise<void>)[] = [];

beforeAll(async () => {
  section = sectionOf(await readFile(join(REPO, "README.md"), "utf8"), "Install");
  script = await readFile(join(REPO, "install.sh"), "utf8");
  host = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch(req) {
      const path = new URL(req.url).pathname;
      if (path === "/ath/main/install.sh") return new Response(script);
      // the first half of the script, as a broken transfer leaves it
      if (path === "/cut/install.sh") return new Response(script.slice(0, Math.floor(script.length / 2)));
      return new Response("Not Found", { status: 404 });
    },
  });
  if (!existsSync(ATH_BIN)) expect((await run(["npx", "bun", "run", "build"])).exitCode).toBe(0);
});
afterAll(async () => {
  host?.stop(true);
  for (const c of cleanups) await c();
});

async function scratch(): Promise<string> {
  const d = await tempDir("install-paths");
  cleanups.push(d.remove);
  return d.path;
}

/** The README's line, run by `sh` in `cwd` with HOME there and only the system's PATH; the script host is local. */
async function runLine(line: string, cwd: string, env: Record<string, string> = {}) {
  const local = line.replace("https://raw.githubusercontent.com/ath-protocol", `http://127.0.0.1:${host.port}`);
  return run(["sh", "-c", local], { cwd, env: { HOME: cwd, PATH: "/usr/local/bin:/usr/bin:/bin", ATH_INSTALL_DIR: join(cwd, "bin"), ...env } });
}

describe("the README's install section", () => {
  test("from a clone, as written: the build, then `ath` on PATH through ~/.local/bin", async () => {
    const lines = shellLines(section.slice(0, section.indexOf("**Published channels.**"))).commands;
    expect(lines[0]).toBe("npm install && npx bun run build");
    const home = await scratch();
    for (const line of lines.slice(1)) {
      // $PWD is the clone; HOME a fresh one
      const r = await run(["sh", "-c", line], { cwd: REPO, env: { HOME: home } });
      expect({ line, code: r.exitCode, err: r.stderr }).toEqual({ line, code: 0, err: "" });
    }
    const onPath = await run(["sh", "-c", "ath --version"], { env: { HOME: home, PATH: `${home}/.local/bin:/usr/bin:/bin` } });
    expect(onPath.exitCode).toBe(0);
    expect(onPath.stdout).toMatch(/^\d+\.\d+\.\d+ \(commit [\w-]+, linux-/);
  });

  test("the install-script line exits non-zero when the script is not there, and installs nothing (no `curl … | sh`)", async () => {
    const line = shellLines(section).commands.find((c) => c.includes("install.sh"))!;
    expect(line).not.toContain("| sh");
    const missing = line.replace("/ath/main/install.sh", "/nowhere/install.sh");
    const dir = await scratch();
    const r = await runLine(missing, dir);
    expect(r.exitCode).not.toBe(0);
    expect(existsSync(join(dir, "bin"))).toBe(false);
    // the old form is why: sh runs the empty download and says all went well
    const piped = await runLine(`curl -fsSL http://127.0.0.1:${host.port}/nowhere/install.sh | sh`, dir);
    expect(piped.exitCode).toBe(0);
  });

  test("the script, fetched, exits 1 when no release is there, says what works from a clone, installs nothing", async () => {
    const line = shellLines(section).commands.find((c) => c.includes("install.sh"))!;
    const dir = await scratch();
    const r = await runLine(line, dir, { ATH_DOWNLOAD_URL: `http://127.0.0.1:${host.port}/releases/none` });
    expect(r.exitCode).toBe(1);
    expect(r.stderr).toContain("could not download");
    expect(r.stderr).toContain('ATH_DOWNLOAD_URL="file://$PWD/dist/release" sh install.sh');
    expect(existsSync(join(dir, "bin", "ath"))).toBe(false);
  });

  test("a script cut short in transfer runs nothing", async () => {
    const line = shellLines(section).commands.find((c) => c.includes("install.sh"))!.replace("/ath/main/", "/cut/");
    const dir = await scratch();
    const r = await runLine(line, dir, { ATH_DOWNLOAD_URL: `http://127.0.0.1:${host.port}/releases/none` });
    expect(r.exitCode).not.toBe(0);
    expect(r.stdout).not.toContain("downloading");
    expect(readdirSync(dir).filter((f) => f !== "install.sh")).toEqual([]);
  });

  test("until a release is published: install.sh from your own release build (file://), as the README says", async () => {
    expect(section).toContain("`npx bun run release --only linux-x64`");
    expect(section).toContain('`ATH_DOWNLOAD_URL="file://$PWD/dist/release" sh install.sh`');
    const out = await scratch();
    // `npx bun run release --only linux-x64`, written elsewhere than the clone's dist/
    const built = await run(["npx", "bun", "scripts/release.ts", "--only", "linux-x64", "--out", out]);
    expect(built.exitCode).toBe(0);
    const dir = await scratch();
    const r = await run(["sh", join(REPO, "install.sh")], { cwd: dir, env: { HOME: dir, PATH: "/usr/bin:/bin", ATH_DOWNLOAD_URL: `file://${out}/release`, ATH_TARGET: "linux-x64", ATH_INSTALL_DIR: join(dir, "bin") } });
    expect({ code: r.exitCode, err: r.stderr }).toEqual({ code: 0, err: "" });
    expect(r.stdout).toContain(`installed ${join(dir, "bin", "ath")}: ath `);
    expect(r.stdout).toContain("is not on your PATH");
    expect((await run([join(dir, "bin", "ath"), "--version"])).exitCode).toBe(0);
  }, 120_000);
});
