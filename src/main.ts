#!/usr/bin/env bun
/**
 * `ath`, the entry point. `ath --version` (version, commit, target) is answered before anything else loads (a CLI's
 * most common probe, budgeted at 1.3× the runtime's bare start); everything else is the root command in cli/root.ts.
 */
import { formatOf, isVersion } from "./cli/kit/flags.ts";
import { versionText } from "./build.ts";

/**
 * Runs `ath` with `argv` (without the executable) and returns the exit code. `--version` is answered here and only
 * here (`write` is where its answer goes: stdout, or a test's buffer).
 */
export async function main(argv: string[], write: (s: string) => unknown = (s) => Bun.write(Bun.stdout, s)): Promise<number> {
  if (isVersion(argv)) {
    await write(versionText(formatOf(argv) === "json"));
    return 0;
  }
  const { run } = await import("./cli/root.ts");
  return run(argv);
}

if (import.meta.main) process.exitCode = await main(process.argv.slice(2));
