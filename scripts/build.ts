/**
 * Builds the single executable `dist/ath` with `bun build --compile` (`--outfile PATH` to build elsewhere: the tests
 * compile their own copy). `--splitting` keeps lazily imported commands (and the gateway) out of the start-up path:
 * without it `ath --version` loads every module (≈ 60 ms vs 13 ms). `--bytecode` ships precompiled bytecode, which
 * takes the parse and compile of the bundled libraries (zod above all) off every start: `ath status` 88 → 69 ms.
 * The commit (`git rev-parse`, `-dirty` when tracked files changed; `ATH_BUILD_COMMIT` overrides) and the target are
 * written into the binary for `ath --version`. scripts/release.ts builds every platform with `compile()`.
 */
import { $ } from "bun";

export const ROOT = new URL("..", import.meta.url).pathname;

/** The commit being built: the environment's `ATH_BUILD_COMMIT`, else git's HEAD (12 hex digits), else `unknown`. */
export async function buildCommit(): Promise<string> {
  if (process.env.ATH_BUILD_COMMIT) return process.env.ATH_BUILD_COMMIT;
  const head = await $`git rev-parse --short=12 HEAD`.cwd(ROOT).quiet().nothrow();
  if (head.exitCode !== 0) return "unknown";
  const dirty = await $`git status --porcelain --untracked-files=no`.cwd(ROOT).quiet().nothrow();
  return `${head.text().trim()}${dirty.exitCode === 0 && dirty.text().trim() !== "" ? "-dirty" : ""}`;
}

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

if (import.meta.main) {
  const i = process.argv.indexOf("--outfile");
  const outfile = i >= 0 && process.argv[i + 1] ? process.argv[i + 1]! : `${ROOT}dist/ath`;
  await compile({ outfile, commit: await buildCommit() });
  console.log(`built ${outfile}`);
}
