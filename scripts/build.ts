/** Builds the single executable `dist/ath` with `bun build --compile`. */
import { $ } from "bun";

const root = new URL("..", import.meta.url).pathname;
await $`bun build --compile --minify --sourcemap=none ${root}src/main.ts --outfile ${root}dist/ath`.cwd(root);
console.log("built dist/ath");
