/**
 * `bun run release`: the downloadable builds of `ath`. Writes
 *  - dist/release/ath-<target> for every target below (`ath-windows-x64.exe` for Windows), each compiled with
 *    `bun build --compile --target=bun-<target>` (Bun fetches the runtime of a foreign target from the npm
 *    registry once, into its cache), and dist/release/SHA256SUMS in `sha256sum -c` format;
 *  - dist/npm/<package>/ folders ready for `npm publish`, on the esbuild/biome pattern: one thin package whose `bin`
 *    is `ath` (a small Node launcher, bin/ath.js, that runs the binary of the platform package npm installed), with
 *    one optional dependency per platform, each carrying `os`/`cpu`/`libc` so npm installs only the matching one —
 *    no postinstall download. Publish the platform packages first, then the thin one.
 * `--only linux-x64,linux-arm64` builds a subset (the npm folders then list only those); `--out DIR` writes DIR/release
 * and DIR/npm instead of dist/. The names of the npm
 * packages and of the targets are the contract install.sh and the launcher read; change them together.
 */
import { createHash } from "node:crypto";
import { chmod, copyFile, link, mkdir, readFile, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import pkg from "../package.json" with { type: "json" };
import { ROOT, buildCommit, compile } from "./build.ts";

export interface Target {
  /** The artifact's name after `ath-`, and its `ath --version` target. */
  name: string;
  os: "linux" | "darwin" | "win32";
  cpu: "x64" | "arm64";
  libc?: "glibc" | "musl";
}

export const TARGETS: Target[] = [
  { name: "linux-x64", os: "linux", cpu: "x64", libc: "glibc" },
  { name: "linux-x64-musl", os: "linux", cpu: "x64", libc: "musl" },
  { name: "linux-arm64", os: "linux", cpu: "arm64", libc: "glibc" },
  { name: "darwin-x64", os: "darwin", cpu: "x64" },
  { name: "darwin-arm64", os: "darwin", cpu: "arm64" },
  { name: "windows-x64", os: "win32", cpu: "x64" },
];

/** The npm scope of every package; the thin one is `${NPM_SCOPE}/ath`, a platform's `${NPM_SCOPE}/ath-<target>`. */
export const NPM_SCOPE = "@ath-protocol";
export const NPM_MAIN = `${NPM_SCOPE}/ath`;

export const artifactName = (t: Target) => `ath-${t.name}${t.os === "win32" ? ".exe" : ""}`;
export const npmPackageName = (t: Target) => `${NPM_SCOPE}/ath-${t.name}`;
const binaryInPackage = (t: Target) => `bin/${t.os === "win32" ? "ath.exe" : "ath"}`;

export interface ReleaseResult {
  dir: string;
  npmDir: string;
  artifacts: { target: Target; file: string; sha256: string; seconds: number }[];
}

export async function release(o: { targets?: Target[]; out?: string } = {}): Promise<ReleaseResult> {
  const targets = o.targets ?? TARGETS;
  const out = o.out ?? join(ROOT, "dist");
  const dir = join(out, "release");
  const npmDir = join(out, "npm");
  await rm(dir, { recursive: true, force: true });
  await rm(npmDir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true });
  const commit = await buildCommit();
  // Two builds at a time: one leaves a CPU idle while it writes its ~100 MB (six on 2 CPUs: 11.7 → 8.9 s; six at
  // once, 9.0 s). The artifacts keep the order of `targets`.
  const artifacts: ReleaseResult["artifacts"] = new Array(targets.length);
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < targets.length; i = next++) {
      const target = targets[i]!;
      const file = join(dir, artifactName(target));
      const started = performance.now();
      await compile({ outfile: file, target: target.name, commit });
      const sha256 = createHash("sha256").update(await readFile(file)).digest("hex");
      artifacts[i] = { target, file, sha256, seconds: (performance.now() - started) / 1000 };
    }
  };
  await Promise.all([worker(), worker()]);
  await writeFile(join(dir, "SHA256SUMS"), artifacts.map((a) => `${a.sha256}  ${artifactName(a.target)}\n`).join(""));
  await writeNpmPackages(npmDir, artifacts.map((a) => ({ target: a.target, file: a.file })));
  return { dir, npmDir, artifacts };
}

async function writeNpmPackages(npmDir: string, builds: { target: Target; file: string }[]): Promise<void> {
  const common = { version: pkg.version, description: pkg.description, publishConfig: { access: "public" } };
  for (const { target, file } of builds) {
    const folder = join(npmDir, `ath-${target.name}`);
    await mkdir(join(folder, "bin"), { recursive: true });
    const bin = join(folder, binaryInPackage(target));
    // a hard link keeps dist/ from holding every binary twice; copy where links are not possible
    await link(file, bin).catch(() => copyFile(file, bin));
    await chmod(bin, 0o755);
    await writeJson(join(folder, "package.json"), {
      name: npmPackageName(target),
      ...common,
      os: [target.os],
      cpu: [target.cpu],
      ...(target.libc ? { libc: [target.libc] } : {}),
      files: [binaryInPackage(target)],
      preferUnplugged: true,
    });
    await writeFile(join(folder, "README.md"), `# ${npmPackageName(target)}\n\nThe \`ath\` executable for ${target.name}. Install \`${NPM_MAIN}\`, which picks this package on ${target.name}.\n`);
  }
  const main = join(npmDir, "ath");
  await mkdir(join(main, "bin"), { recursive: true });
  const launcher = join(main, "bin", "ath.js");
  await writeFile(launcher, launcherSource(builds.map((b) => b.target)));
  await chmod(launcher, 0o755);
  await writeJson(join(main, "package.json"), {
    name: NPM_MAIN,
    ...common,
    bin: { ath: "bin/ath.js" },
    files: ["bin/ath.js"],
    engines: { node: ">=18" },
    optionalDependencies: Object.fromEntries(builds.map((b) => [npmPackageName(b.target), pkg.version])),
  });
  await writeFile(join(main, "README.md"), `# ${NPM_MAIN}\n\n${pkg.description}. \`npm install -g ${NPM_MAIN}\` puts \`ath\` on PATH; \`npx ${NPM_MAIN} --help\` runs it once.\nnpm installs the one platform package (\`${NPM_SCOPE}/ath-<os>-<cpu>\`) that matches the machine.\n`);
}

const writeJson = (path: string, value: unknown) => writeFile(path, `${JSON.stringify(value, null, 2)}\n`);

/**
 * The thin package's `bin`: finds the platform package npm installed (musl told apart from glibc as biome's
 * launcher does) and runs its binary with the same arguments and stdio, passing signals on and exiting as it did.
 * `ATH_BINARY` points it at another executable.
 */
function launcherSource(targets: Target[]): string {
  const table = Object.fromEntries(targets.map((t) => [`${t.os}-${t.cpu}${t.libc === "musl" ? "-musl" : ""}`, `${npmPackageName(t)}/${binaryInPackage(t)}`]));
  return `#!/usr/bin/env node
// ${NPM_MAIN}: runs the \`ath\` executable of the platform package npm installed next to this one.
"use strict";
const { spawn, execSync } = require("node:child_process");

const PACKAGES = ${JSON.stringify(table, null, 2)};

function isMusl() {
  if (process.platform !== "linux") return false;
  const report = typeof process.report?.getReport === "function" ? process.report.getReport() : undefined;
  if (report?.header && "glibcVersionRuntime" in report.header) return !report.header.glibcVersionRuntime;
  try {
    return execSync("ldd --version 2>&1", { encoding: "utf8" }).includes("musl");
  } catch (e) {
    return String(e.stdout ?? "").includes("musl");
  }
}

function binary() {
  if (process.env.ATH_BINARY) return process.env.ATH_BINARY;
  const key = \`\${process.platform}-\${process.arch}\${isMusl() ? "-musl" : ""}\`;
  const entry = PACKAGES[key];
  if (!entry) {
    console.error(\`ath: no prebuilt executable for \${key} (there are: \${Object.keys(PACKAGES).join(", ")})\`);
    process.exit(1);
  }
  try {
    return require.resolve(entry);
  } catch {
    console.error(\`ath: the package \${entry.split("/").slice(0, 2).join("/")} is not installed: reinstall ${NPM_MAIN} without --no-optional / --omit=optional\`);
    process.exit(1);
  }
}

const child = spawn(binary(), process.argv.slice(2), { stdio: "inherit" });
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) process.on(signal, () => child.kill(signal));
child.on("error", (e) => {
  console.error(\`ath: \${e.message}\`);
  process.exit(1);
});
child.on("exit", (code, signal) => {
  if (signal) {
    process.removeAllListeners(signal);
    process.kill(process.pid, signal);
  } else process.exit(code ?? 1);
});
`;
}

if (import.meta.main) {
  const i = process.argv.indexOf("--only");
  const only = i >= 0 ? (process.argv[i + 1] ?? "").split(",") : undefined;
  const targets = only ? TARGETS.filter((t) => only.includes(t.name)) : TARGETS;
  if (only && targets.length !== only.length) {
    console.error(`release: unknown target in --only ${only.join(",")} (known: ${TARGETS.map((t) => t.name).join(", ")})`);
    process.exit(2);
  }
  const o = process.argv.indexOf("--out");
  const r = await release({ targets, ...(o >= 0 && process.argv[o + 1] ? { out: process.argv[o + 1] } : {}) });
  for (const a of r.artifacts) console.log(`${a.sha256}  ${a.file}  (${a.seconds.toFixed(1)} s)`);
  console.log(`wrote ${r.dir}/SHA256SUMS and the npm packages under ${r.npmDir}`);
}
