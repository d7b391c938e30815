/**
 * `ath serve` — run the gateway (DESIGN.md §4). The flags, their `ATH_*` variables and every rule about them live in
 * gateway/options.ts; a problem with them, or with the providers file, is a usage error (exit 2).
 */
import { defineCommand } from "citty";
import { consola } from "consola";
import pkg from "../../package.json" with { type: "json" };
import { usageError } from "./errors.ts";
import { OptionsError, resolveServeOptions, SERVE_FLAGS } from "../gateway/options.ts";

export default defineCommand({
  meta: { name: "serve", description: "Run the ATH gateway" },
  args: SERVE_FLAGS,
  async run({ args }) {
    let options;
    try {
      options = resolveServeOptions(args, process.env);
    } catch (e) {
      if (e instanceof OptionsError) throw usageError(e.message);
      throw e;
    }
    const [{ runServer }, { ConfigError }, { consoleLogger }] = await Promise.all([
      import("../gateway/serve.ts"),
      import("../gateway/providers/file.ts"),
      import("../gateway/ops/log.ts"),
    ]);
    if (options.dev) consola.warn("--dev: http:// and loopback agent identity documents are accepted. Never use this in production.");
    try {
      await runServer(options, { version: pkg.version, log: consoleLogger() });
    } catch (e) {
      if (e instanceof ConfigError) throw usageError(e.message);
      throw e;
    }
  },
});
