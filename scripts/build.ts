/**
 * Builds the single executable `dist/ath` with `bun build --compile`. `--splitting` keeps lazily imported commands
 * (and the gateway) out of the start-up path: without it `ath --version` loads every module (≈ 60 ms vs 13 ms).
 */
import { $ } from "bun";

const root = new URL("..", import.meta.url).pathname;
await $`bun build --compile --splitting --minify --sourcemap=none ${root}src/main.ts --outfile ${root}dist/ath`.cwd(root);
console.log("built dist/ath");
