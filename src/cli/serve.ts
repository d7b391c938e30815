/**
 * `ath serve` — run the gateway (DESIGN.md §4). The flags, their `ATH_*` variables and every rule about them live in
 * gateway/options.ts; a problem with them, or with the providers file, is a usage error (exit 2). Nothing of the
 * gateway is imported before serve runs or its help is asked for: `ath --help` loads this module for its meta, and
 * the agent commands must not carry the server (tests/unit/cli/startup.test.ts).
 */
import pkg from "../../package.json" with { type: "json" };
import { ClientError, usageError } from "./errors.ts";
import { defineCommand } from "./flags.ts";

export default defineCommand({
  meta: { name: "serve", description: "Run the ATH gateway" },
  args: () => import("../gateway/options.ts").then((m) => m.SERVE_FLAGS),
  async run({ args }) {
    const { OptionsError, resolveServeOptions } = await import("../gateway/options.ts");
    let options;
    try {
      options = resolveServeOptions(args, process.env);
    } catch (e) {
      if (e instanceof OptionsError) throw usageError(e.message);
      throw e;
    }
    const [{ runServer }, { ConfigError }, { createLogger }] = await Promise.all([
      import("../gateway/serve.ts"),
      import("../gateway/providers/file.ts"),
      import("../gateway/ops/log.ts"),
    ]);
    const log = createLogger({ format: options.logFormat, level: options.logLevel });
    if (options.dev) log.warn("--dev: http:// and loopback agent identity documents are accepted. Never use this in production.");
    try {
      await runServer(options, { version: pkg.version, log });
    } catch (e) {
      // one problem a line: an operator fixes a providers file from this list
      if (e instanceof ConfigError) throw new ClientError("usage", "USAGE", e.message, { multiline: true });
      throw e;
    }
  },
});
