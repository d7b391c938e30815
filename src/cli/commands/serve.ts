/**
 * `ath serve` — run the gateway (DESIGN.md §4). The flags, their `ATH_*` variables and every rule about them live in
 * gateway/options.ts; a problem with them, or with the providers file, is a usage error (exit 2). Nothing of the
 * gateway is imported before serve runs or its help is asked for: `ath --help` loads this module for its meta, and
 * the agent commands must not carry the server (tests/unit/cli/startup.test.ts).
 */
import pkg from "../../../package.json" with { type: "json" };
import { ClientError, usageError } from "../kit/errors.ts";
import { defineCommand } from "../kit/flags.ts";

export default defineCommand({
  meta: { name: "serve", description: "Run the ATH gateway" },
  args: () => import("../../gateway/options.ts").then((m) => m.SERVE_FLAGS),
  async run({ args }) {
    const { OptionsError, resolveServeOptions } = await import("../../gateway/options.ts");
    let options;
    try {
      options = resolveServeOptions(args, process.env);
    } catch (e) {
      if (e instanceof OptionsError) throw usageError(e.message);
      throw e;
    }
    const notResized = sizeFetchPool();
    const [{ runServer }, { ConfigError }, { createLogger }] = await Promise.all([
      import("../../gateway/serve.ts"),
      import("../../gateway/providers/file.ts"),
      import("../../gateway/ops/log.ts"),
    ]);
    const log = createLogger({ format: options.logFormat, level: options.logLevel });
    if (notResized) log.warn(notResized);
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

/**
 * Bun's `fetch` shares one process-wide pool of connections — 256 unless BUN_CONFIG_MAX_HTTP_REQUESTS says otherwise,
 * read once at process start — so one provider that never answers would hold all 256 and starve every other outbound
 * call, whatever the per-provider cap (DESIGN §14; measured). `ath serve` therefore re-executes itself once, in place
 * (execve: same pid, same stdio, same signals), with the pool at Bun's maximum; the per-provider cap
 * (--upstream-concurrency, default 256) and the identity-document pool are then what bound outbound calls. An
 * operator's own BUN_CONFIG_MAX_HTTP_REQUESTS is kept as given. Where the re-exec fails, `ath serve` says so and goes on
 * with the default pool.
 */
function sizeFetchPool(): string | undefined {
  const execve = (process as { execve?: (file: string, args: string[], env: Record<string, string | undefined>) => never }).execve;
  if (process.env.BUN_CONFIG_MAX_HTTP_REQUESTS !== undefined || typeof execve !== "function" || process.platform === "win32") return undefined;
  // A compiled binary sees argv [bun, /$bunfs/root/<name>, …args]; the OS started it as [path, …args].
  const compiled = Bun.main.startsWith("/$bunfs/") || Bun.main.startsWith("B:/~BUN/");
  // From source, Bun's own flags (execArgv: --cpu-prof…) go along.
  const args = compiled ? [process.execPath, ...process.argv.slice(2)] : [process.execPath, ...process.execArgv, ...process.argv.slice(1)];
  try {
    execve(process.execPath, args, { ...process.env, BUN_CONFIG_MAX_HTTP_REQUESTS: String(FETCH_POOL_SIZE) });
  } catch (e) {
    // the executable cannot be started again as it was (under qemu-user without binfmt_misc: ENOEXEC): serve anyway
    const code = (e as { code?: string }).code ?? "error";
    return `could not re-execute with a larger outbound connection pool (${code}): Bun's default of 256 applies; set BUN_CONFIG_MAX_HTTP_REQUESTS to choose it and skip the re-exec`;
  }
  return undefined;
}

/** Bun's largest fetch pool. */
const FETCH_POOL_SIZE = 65_336;
