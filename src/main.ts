#!/usr/bin/env bun
/**
 * `ath`, the entry point. `ath --version` (version, commit, target) is answered before anything else loads (a CLI's
 * most common probe, budgeted at 1.3× the runtime's bare start); everything else is the root command in cli/root.ts.
 */
import { formatOf, isVersion } from "./cli/flags.ts";
import { versionText } from "./protocol/build.ts";

/** Runs `ath` with `argv` (without the executable) and returns the exit code. */
export async function main(argv: string[]): Promise<number> {
  if (isVersion(argv)) {
    await Bun.write(Bun.stdout, versionText(formatOf(argv) === "json"));
    return 0;
  }
  const { run } = await import("./cli/root.ts");
  return run(argv);
}

if (import.meta.main) process.exitCode = await main(process.argv.slice(2));
