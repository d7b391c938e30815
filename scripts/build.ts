/**
 * Builds the single executable `dist/ath` with `bun build --compile` (`--outfile PATH` to build elsewhere: the tests
 * compile their own copy). `--splitting` keeps lazily imported commands (and the gateway) out of the start-up path:
 * without it `ath --version` loads every module (≈ 60 ms vs 13 ms). `--bytecode` ships precompiled bytecode, which
 * takes the parse and compile of the bundled libraries (zod above all) off every start: `ath status` 88 → 69 ms.
 */
import { $ } from "bun";

const root = new URL("..", import.meta.url).pathname;
const i = process.argv.indexOf("--outfile");
const outfile = i >= 0 && process.argv[i + 1] ? process.argv[i + 1]! : `${root}dist/ath`;
await $`bun build --compile --splitting --bytecode --format esm --minify --sourcemap=none ${root}src/main.ts --outfile ${outfile}`.cwd(root).quiet();
console.log(`built ${outfile}`);
