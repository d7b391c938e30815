/**
 * The downloads, as a user gets them: `bun run release` (scripts/release.ts) builds once for this file, into a
 * temporary directory; then every artifact is checked to be the executable its name says (magic bytes: ELF x86-64
 * glibc/musl, ELF aarch64, Mach-O x86-64/arm64, PE), the three Linux ones run `--version` and `serve --demo` to
 * `/health` (musl through Debian's musl with a libstdc++ shim, arm64 under qemu-user: tests/helpers/release/),
 * install.sh installs from a local HTTP server and refuses a flipped byte, and the npm packages are published to a
 * local verdaccio (the musl one with a stand-in for the binary npm never installs on this glibc machine) and
 * installed globally into a temporary prefix.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, readFileSync, statSync } from "node:fs";
import { cp, readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import pkg from "../../package.json" with { type: "json" };
import { NPM_MAIN, NPM_SCOPE, TARGETS, artifactName } from "../../scripts/release.ts";
import { ensureBinary } from "../helpers/cli-binary.ts";
import { freePort, tempDir } from "../helpers/net.ts";
import { REPO, run, start, type Running } from "../helpers/processes.ts";
import { executableKind, muslRunner, nativeRunner, qemuRunner, type Runner } from "../helpers/release/runners.ts";

const SLOW = 600_000;
/** Enough of an executable to tell its kind: every header executableKind reads lies in the first 64 KiB. */
const HEAD_BYTES = 65_536;
let out: { path: string; remove: () => Promise<void> };
let releaseDir: string;
const cleanups: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  out = await tempDir("release");
  const built = await run([process.execPath, "scripts/release.ts", "--out", out.path]);
  if (built.exitCode !== 0) throw new Error(`bun run release failed:\n${built.stdout}${built.stderr}`);
  releaseDir = join(out.path, "release");
}, SLOW);

afterAll(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => {});
  await out?.remove();
});

const headCommit = () => Bun.spawnSync(["git", "rev-parse", "--short=12", "HEAD"], { cwd: REPO }).stdout.toString().trim();

describe("bun run release", () => {
  test("writes the six artifacts, each the executable its name says, and SHA256SUMS listing each", async () => {
    const kinds: Record<string, string> = {};
    // the headers that say what an executable is (ELF program headers and interpreter, Mach-O, PE) are at its start
    for (const t of TARGETS) kinds[artifactName(t)] = executableKind(await Bun.file(join(releaseDir, artifactName(t))).slice(0, HEAD_BYTES).bytes());
    expect(kinds).toEqual({
      "ath-linux-x64": "elf x86-64 glibc",
      "ath-linux-x64-musl": "elf x86-64 musl",
      "ath-linux-arm64": "elf aarch64 glibc",
      "ath-darwin-x64": "macho x86-64",
      "ath-darwin-arm64": "macho arm64",
      "ath-windows-x64.exe": "pe x86-64",
    });
    const sums = (await readFile(join(releaseDir, "SHA256SUMS"), "utf8")).trim().split("\n");
    expect(sums.map((line) => line.replace(/^[0-9a-f]{64} {2}/, "<sha256>  "))).toEqual(TARGETS.map((t) => `<sha256>  ${artifactName(t)}`));
    // each hash is its file's: sha256sum -c reads the format and hashes every file once
    const check = Bun.spawnSync(["sha256sum", "-c", "SHA256SUMS"], { cwd: releaseDir, stdout: "pipe", stderr: "pipe" });
    expect({ exit: check.exitCode, out: check.stdout.toString() }).toEqual({ exit: 0, out: TARGETS.map((t) => `${artifactName(t)}: OK\n`).join("") });
  });

  const linux: [string, () => Promise<Runner>][] = [
    ["linux-x64", async () => nativeRunner()],
    ["linux-x64-musl", () => muslRunner(join(out.path, "musl-shim"))],
    ["linux-arm64", async () => qemuRunner()],
  ];
  const runners = new Map<string, Runner>();
  const runner = async (name: string) => {
    if (!runners.has(name)) runners.set(name, await linux.find(([n]) => n === name)![1]());
    return runners.get(name)!;
  };

  for (const [name] of linux) {
    test(`ath-${name} runs: --version names its version, commit and target; serve --demo answers /health`, async () => {
      const r = await runner(name);
      const file = join(releaseDir, `ath-${name}`);
      const home = await tempDir(`release-${name}`);
      cleanups.push(home.remove);
      const env = { ...r.env, ATH_HOME: home.path, ATH_LOG_FORMAT: "text" };
      const version = await run([...r.argv(file), "--version", "--format", "json"], { env });
      expect({ exit: version.exitCode, stderr: version.stderr }).toEqual({ exit: 0, stderr: "" });
      const info = JSON.parse(version.stdout);
      expect(info).toEqual({ version: pkg.version, commit: expect.stringMatching(/^[0-9a-f]{12}(-dirty)?$/), target: name });
      expect(info.commit.slice(0, 12)).toBe(headCommit());
      const text = await run([...r.argv(file), "--version"], { env });
      expect(text.stdout).toBe(`${pkg.version} (commit ${info.commit}, ${name})\n`);

      const gateway: Running = start([...r.argv(file), "serve", "--demo", "--port", "0"], { env });
      try {
        const [, url] = await gateway.waitFor("stdout", /listening on (http:\/\/127\.0\.0\.1:\d+)/);
        const health = await fetch(`${url}/health`);
        expect({ status: health.status, body: await health.json() }).toEqual({ status: 200, body: { status: "ok", version: pkg.version } });
        const discovery = (await (await fetch(`${url}/.well-known/ath.json`)).json()) as { supported_providers: { provider_id: string }[] };
        expect(discovery.supported_providers.map((p) => p.provider_id)).toEqual(["demo"]);
      } finally {
        expect((await gateway.kill("SIGTERM")).exitCode).toBe(0);
      }
    }, SLOW);
  }
});

test("under qemu-user without the variables it re-executes itself for, serve's re-exec cannot run: it says so and serves anyway", async () => {
  const qemu = qemuRunner();
  const home = await tempDir("release-qemu-reexec");
  cleanups.push(home.remove);
  const gateway = start([...qemu.argv(join(releaseDir, "ath-linux-arm64")), "serve", "--demo", "--port", "0"], {
    env: { ATH_HOME: home.path, ATH_LOG_FORMAT: "text" },
  });
  try {
    const [, url] = await gateway.waitFor("stdout", /listening on (http:\/\/127\.0\.0\.1:\d+)/);
    expect((await fetch(`${url}/health`)).status).toBe(200);
    await gateway.waitFor("stderr", /could not re-execute with the runtime's settings \(ENOEXEC\): Bun's outbound connection pool stays at 256; .*set BUN_CONFIG_MAX_HTTP_REQUESTS and MIMALLOC_PURGE_HOLES/);
  } finally {
    expect((await gateway.kill("SIGTERM")).exitCode).toBe(0);
  }
}, SLOW);

test("the everyday build (dist/ath, built by `npm test`) names its commit and this machine's target too", async () => {
  const r = await run([ensureBinary(), "--version", "--format", "json"]);
  expect(r.exitCode).toBe(0);
  const info = JSON.parse(r.stdout);
  expect(info).toEqual({ version: pkg.version, commit: expect.stringMatching(/^[0-9a-f]{12}(-dirty)?$/), target: "linux-x64" });
  // dist/ath is built by `npm test` from this checkout (rebuilt first when older than it: tests/helpers/cli-binary.ts)
  expect({ built_from: info.commit.slice(0, 12) }).toEqual({ built_from: headCommit() });
});

describe("install.sh", () => {
  /** A local download server over `dir`, serving `override` bytes in place of some files. */
  function serve(dir: string, override: Record<string, Uint8Array<ArrayBuffer>> = {}) {
    const server = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      async fetch(req) {
        const name = decodeURIComponent(new URL(req.url).pathname.slice(1));
        if (override[name]) return new Response(override[name]);
        const file = Bun.file(join(dir, name));
        return /^[\w.-]+$/.test(name) && (await file.exists()) ? new Response(file) : new Response("not found", { status: 404 });
      },
    });
    cleanups.push(async () => server.stop(true));
    return `http://127.0.0.1:${server.port}`;
  }

  const install = (url: string, dir: string, path = "/usr/bin:/bin") =>
    run(["dash", join(REPO, "install.sh")], { env: { ATH_DOWNLOAD_URL: url, ATH_INSTALL_DIR: dir, PATH: path, HOME: dir } });

  test("is POSIX sh: sh -n and dash -n parse it", () => {
    for (const shell of ["sh", "dash"]) expect(Bun.spawnSync([shell, "-n", join(REPO, "install.sh")]).exitCode).toBe(0);
  });

  test("installs this machine's build from ATH_DOWNLOAD_URL into ATH_INSTALL_DIR, checked, and says how to reach it on PATH", async () => {
    const url = serve(releaseDir);
    const home = await tempDir("install");
    cleanups.push(home.remove);
    const dir = join(home.path, "bin");
    const r = await install(`${url}/`, dir);
    expect({ exit: r.exitCode, stderr: r.stderr }).toEqual({ exit: 0, stderr: "" });
    expect(r.stdout).toContain(`downloading ${url}/ath-linux-x64\n`);
    expect(r.stdout).toContain(`${dir} is not on your PATH`);
    expect(r.stdout).toContain(`export PATH="${dir}:$PATH"`);
    expect(await readFile(join(dir, "ath"))).toEqual(await readFile(join(releaseDir, "ath-linux-x64")));
    const v = await run([join(dir, "ath"), "--version", "--format", "json"]);
    expect(JSON.parse(v.stdout)).toMatchObject({ version: pkg.version, target: "linux-x64" });
    // on PATH already: no advice, and a second run replaces the binary in place
    const again = await install(url, dir, `${dir}:/usr/bin:/bin`);
    expect(again.exitCode).toBe(0);
    expect(again.stdout).not.toContain("not on your PATH");
    expect(again.stdout).toContain("run: ath --help");
    expect((await readdir(dir)).sort()).toEqual(["ath"]);
  }, SLOW);

  test("a download with one byte flipped installs nothing and exits non-zero; an old ath stays as it was", async () => {
    const good = new Uint8Array(await readFile(join(releaseDir, "ath-linux-x64")));
    const bad = good.slice();
    bad[bad.length >> 1]! ^= 0x01;
    const url = serve(releaseDir, { "ath-linux-x64": bad });
    const home = await tempDir("install-bad");
    cleanups.push(home.remove);
    const fresh = join(home.path, "fresh");
    const r = await install(url, fresh);
    expect(r.exitCode).not.toBe(0);
    expect(r.stderr).toContain("checksum mismatch for ath-linux-x64");
    expect(r.stderr).toContain("nothing installed");
    expect(existsSync(join(fresh, "ath"))).toBe(false);

    const old = join(home.path, "old");
    await Bun.write(join(old, "ath"), "#!/bin/sh\necho old\n");
    const again = await install(url, old);
    expect(again.exitCode).not.toBe(0);
    expect(await readFile(join(old, "ath"), "utf8")).toBe("#!/bin/sh\necho old\n");
    expect(await readdir(old)).toEqual(["ath"]);
  }, SLOW);
});

describe("npm packages", () => {
  test("publish to a local registry; npm install -g gives `ath` from the platform package; npx runs it too", async () => {
    const work = await tempDir("npm");
    cleanups.push(work.remove);
    const port = await freePort();
    const registry = `http://127.0.0.1:${port}/`;
    await writeFile(
      join(work.path, "verdaccio.yaml"),
      [
        `storage: ${join(work.path, "storage")}`,
        "auth:",
        `  htpasswd: { file: ${join(work.path, "htpasswd")}, max_users: 1 }`,
        "uplinks: {}",
        "packages:",
        "  '**': { access: $all, publish: $authenticated }",
        "max_body_size: 500mb",
        "log: { type: stdout, format: pretty, level: warn }",
        "",
      ].join("\n"),
    );
    const verdaccio = start(["node", join(REPO, "node_modules/verdaccio/bin/verdaccio"), "--config", join(work.path, "verdaccio.yaml"), "--listen", `127.0.0.1:${port}`]);
    cleanups.push(() => verdaccio.kill("SIGKILL"));
    for (let i = 0; ; i++) {
      if ((await fetch(`${registry}-/ping`).catch(() => undefined))?.ok) break;
      if (i > 300) throw new Error(`verdaccio did not start:\n${verdaccio.output()}`);
      await Bun.sleep(100);
    }
    // a user, as `npm adduser` makes one; its token goes into the npmrc every npm call below reads
    const user = await fetch(`${registry}-/user/org.couchdb.user:release-test`, {
      method: "PUT",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ name: "release-test", password: crypto.randomUUID() }),
    });
    const { token } = (await user.json()) as { token: string };
    const npmrc = join(work.path, "npmrc");
    await writeFile(npmrc, `registry=${registry}\n//127.0.0.1:${port}/:_authToken=${token}\n`);
    // npm as a user runs it: none of the npm_config_* variables `npm test` hands its children, this registry only
    const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k))) as Record<string, string>;
    const npm = async (args: string[], cache = "cache") => {
      const [command, ...rest] = args;
      const argv = ["npm", command!, "--userconfig", npmrc, "--registry", registry, "--cache", join(work.path, cache), "--no-audit", "--no-fund", "--no-update-notifier", ...rest];
      const p = Bun.spawn(argv, { cwd: work.path, env: clean, stdin: "ignore", stdout: "pipe", stderr: "pipe" });
      const [stdout, stderr, exitCode] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
      return { exitCode, stdout, stderr };
    };

    // the two x64 Linux packages (npm must choose between them by libc), then the thin one; the others are not
    // published here (packing each costs ~15 s of CPU): npm skips an optional dependency it cannot fetch
    const npmDir = join(out.path, "npm");
    // The musl package is published as release.ts wrote it but for its 100 MB binary, which npm never installs on
    // this glibc machine: npm chooses by the os/cpu/libc of the package.json, kept as written, and skips the
    // package whole. A stand-in that fails loudly takes the binary's place (had npm chosen musl, `ath --version`
    // below would fail, and so would the listing of what came down); that release.ts put the real musl build there
    // is checked first. One 100 MB package is packed and published instead of two.
    const musl = join(npmDir, "ath-linux-x64-musl");
    expect(sameFile(join(musl, "bin", "ath"), join(releaseDir, "ath-linux-x64-musl"))).toBe(true);
    const muslStandIn = join(work.path, "ath-linux-x64-musl");
    await cp(musl, muslStandIn, { recursive: true, filter: (from) => from !== join(musl, "bin", "ath") });
    await writeFile(join(muslStandIn, "bin", "ath"), "#!/bin/sh\necho 'the musl package stand-in ran: npm chose the wrong platform package' >&2\nexit 99\n", { mode: 0o755 });
    const published = await Promise.all([join(npmDir, "ath-linux-x64"), muslStandIn].map((dir) => npm(["publish", dir])));
    for (const p of published) expect({ exit: p.exitCode, err: p.exitCode === 0 ? "" : p.stderr }).toEqual({ exit: 0, err: "" });
    const main = await npm(["publish", join(npmDir, "ath")]);
    expect({ exit: main.exitCode, err: main.exitCode === 0 ? "" : main.stderr }).toEqual({ exit: 0, err: "" });

    const thin = JSON.parse(await readFile(join(npmDir, "ath", "package.json"), "utf8"));
    expect(thin).toMatchObject({ name: NPM_MAIN, version: pkg.version, bin: { ath: "bin/ath.js" } });
    expect(Object.keys(thin.optionalDependencies).sort()).toEqual(TARGETS.map((t) => `${NPM_SCOPE}/ath-${t.name}`).sort());
    for (const t of TARGETS) {
      const p = JSON.parse(await readFile(join(npmDir, `ath-${t.name}`, "package.json"), "utf8"));
      expect(p).toMatchObject({ os: [t.os], cpu: [t.cpu], ...(t.libc ? { libc: [t.libc] } : {}) });
    }

    const prefix = join(work.path, "prefix");
    const installed = await npm(["install", "-g", "--prefix", prefix, NPM_MAIN]);
    expect({ exit: installed.exitCode, err: installed.exitCode === 0 ? "" : installed.stderr }).toEqual({ exit: 0, err: "" });
    const bin = join(prefix, "bin", "ath");
    const v = await run([bin, "--version", "--format", "json"]);
    expect({ exit: v.exitCode, doc: JSON.parse(v.stdout) }).toMatchObject({ exit: 0, doc: { version: pkg.version, target: "linux-x64" } });
    // only this machine's platform package came down (not the musl one)
    const found = [...new Bun.Glob("**/package.json").scanSync({ cwd: join(prefix, "lib", "node_modules"), onlyFiles: true })];
    expect(found.map((f) => f.replace(/\/package\.json$/, "")).sort()).toEqual([NPM_MAIN, `${NPM_MAIN}/node_modules/${NPM_SCOPE}/ath-linux-x64`]);
    // the launcher passes the exit code and the output through
    const usage = await run([bin, "nosuchcommand"]);
    expect(usage.exitCode).toBe(2);
    expect(usage.stderr).toContain("ath: ");

    const npx = await npm(["exec", "--yes", "--package", NPM_MAIN, "--", "ath", "--version"], "cache-npx");
    expect({ exit: npx.exitCode, out: npx.stdout, err: npx.exitCode === 0 ? "" : npx.stderr }).toMatchObject({ err: "", exit: 0, out: expect.stringContaining(`${pkg.version} (commit `) });
  }, SLOW);
});

/** The same file twice: release.ts hard-links each binary into its npm package (or copies it where it cannot). */
function sameFile(a: string, b: string): boolean {
  const [x, y] = [statSync(a), statSync(b)];
  if (x.dev === y.dev && x.ino === y.ino) return true;
  return x.size === y.size && readFileSync(a).equals(readFileSync(b));
}
