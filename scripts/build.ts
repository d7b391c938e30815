/**
 * Builds the single executable `dist/ath` with `bun build --compile` (`--outfile PATH` to build elsewhere).
 * `--splitting` keeps lazily imported commands (and the gateway) out of the start-up path: without it `ath --version`
 * loads every module (≈ 60 ms vs 13 ms). `--bytecode` ships precompiled bytecode, which takes the parse and compile of
 * the bundled libraries (zod above all) off every start: `ath status` 88 → 69 ms. The commit (`git rev-parse`,
 * `-dirty` when tracked files changed; `ATH_BUILD_COMMIT` overrides) and the target are written into the binary for
 * `ath --version`. scripts/release.ts builds every platform with `compile()`.
 *
 * Beside the binary, `<outfile>.built-from` records the build key (`buildKey`): a digest of everything the binary is
 * made of. The tests build `dist/ath` only when that file does not hold the key of the tree as it is now
 * (tests/helpers/cli-binary.ts), so one build serves a whole run and a stale binary is never run. The binary is
 * written under a temporary name and renamed into place: a process running the old one keeps it.
 */
import { $ } from "bun";
import { existsSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync, type Dirent } from "node:fs";
import { join } from "node:path";

export const ROOT = new URL("..", import.meta.url).pathname;

/** The commit being built: the environment's `ATH_BUILD_COMMIT`, else git's HEAD (12 hex digits), else `unknown`. */
export async function buildCommit(): Promise<string> {
  return commitNow();
}

/**
 * The build key: SHA-256 over the commit string `ath --version` will print, the Bun version, and the path and bytes
 * of every file under src/ and of package.json, package-lock.json, tsconfig.json and this script. Two trees with one
 * key build the same binary; any edit to the sources (or a new commit) gives another key.
 */
export function buildKey(root = ROOT): string {
  const hash = new Bun.CryptoHasher("sha256");
  hash.update(`commit ${commitNow(root)}\0bun ${Bun.version}\0`);
  for (const file of keyedFiles(root)) {
    hash.update(`${file}\0`);
    hash.update(readFileSync(join(root, file)));
    hash.update("\0");
  }
  return hash.digest("hex");
}

/** The file beside `outfile` that names the build key it was built from. */
export const keyFileOf = (outfile: string) => `${outfile}.built-from`;

/** The target name of the machine running this script (`linux-x64`, `linux-x64-musl`, `darwin-arm64`…). */
export function hostTarget(): string {
  const os = process.platform === "win32" ? "windows" : process.platform;
  const report = process.report?.getReport?.() as { header?: { glibcVersionRuntime?: string } } | undefined;
  const musl = process.platform === "linux" && report?.header?.glibcVersionRuntime === undefined;
  return `${os}-${process.arch}${musl ? "-musl" : ""}`;
}

export interface CompileOptions {
  outfile: string;
  /** The target name (`linux-arm64`…); absent: this machine's, with the running Bun as the runtime. */
  target?: string;
  commit: string;
}

/** Compiles src/main.ts into one executable. A target other than this machine's fetches Bun's runtime for it. */
export async function compile(o: CompileOptions): Promise<void> {
  const target = o.target ?? hostTarget();
  const cross = o.target === undefined ? [] : [`--target=bun-${o.target}`];
  const define = ["--define", `ATH_BUILD_COMMIT=${JSON.stringify(o.commit)}`, "--define", `ATH_BUILD_TARGET=${JSON.stringify(target)}`];
  await $`bun build --compile ${cross} ${define} --splitting --bytecode --format esm --minify --sourcemap=none ${ROOT}src/main.ts --outfile ${o.outfile}`
    .cwd(ROOT)
    .quiet();
}

/** Builds this machine's binary at `outfile` (atomically) and records its build key beside it. */
export async function build(outfile: string): Promise<void> {
  const key = buildKey();
  const partial = `${outfile}.partial-${process.pid}`;
  try {
    await compile({ outfile: partial, commit: commitNow() });
    renameSync(partial, outfile);
  } finally {
    rmSync(partial, { force: true });
  }
  writeFileSync(keyFileOf(outfile), `${key}\n`);
}

// internal

function commitNow(root = ROOT): string {
  if (process.env.ATH_BUILD_COMMIT) return process.env.ATH_BUILD_COMMIT;
  const git = (...args: string[]) => Bun.spawnSync(["git", ...args], { cwd: root, stdout: "pipe", stderr: "ignore" });
  const head = git("rev-parse", "--short=12", "HEAD");
  if (head.exitCode !== 0) return "unknown";
  const dirty = git("status", "--porcelain", "--untracked-files=no");
  return `${head.stdout.toString().trim()}${dirty.exitCode === 0 && dirty.stdout.toString().trim() !== "" ? "-dirty" : ""}`;
}

/** The files a build reads, repo-relative and sorted: src/ whole, and the manifests and this script. */
function keyedFiles(root: string): string[] {
  const src = (readdirSync(join(root, "src"), { recursive: true, withFileTypes: true }) as Dirent[])
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name).slice(root.length).replace(/^\/+/, ""));
  const manifests = ["package.json", "package-lock.json", "tsconfig.json", "scripts/build.ts"].filter((f) => existsSync(join(root, f)));
  return [...src.sort(), ...manifests];
}

if (import.meta.main) {
  const i = process.argv.indexOf("--outfile");
  const outfile = i >= 0 && process.argv[i + 1] ? process.argv[i + 1]! : `${ROOT}dist/ath`;
  await build(outfile);
  console.log(`built ${outfile}`);
}
