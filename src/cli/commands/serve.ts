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
    const notTuned = tuneRuntime();
    const [{ runServer }, { ConfigError }, { createLogger }] = await Promise.all([
      import("../../gateway/serve.ts"),
      import("../../gateway/providers/file.ts"),
      import("../../gateway/ops/log.ts"),
    ]);
    const log = createLogger({ format: options.logFormat, level: options.logLevel });
    if (notTuned) log.warn(notTuned);
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
 * Settings the runtime reads once, at process start, that `ath serve` wants other than Bun's defaults. `ath serve`
 * therefore re-executes itself once, in place (execve: same pid, same stdio, same signals), with those the operator
 * has not set; an operator's own value of each is kept as given, and with all of them set there is no re-exec. Where
 * the re-exec fails, `ath serve` says so and goes on with the runtime's defaults.
 */
const RUNTIME_ENV: Record<string, { value: string; otherwise: string }> = {
  /**
   * Bun's `fetch` shares one process-wide pool of connections — 256 unless this says otherwise — so one provider that
   * never answers would hold all 256 and starve every other outbound call that still uses `fetch`, whatever the
   * per-provider cap (DESIGN §14; measured): Bun's largest pool; the per-provider cap (--upstream-concurrency, default
   * 256) and the identity-document pool are then what bound outbound calls.
   */
  BUN_CONFIG_MAX_HTTP_REQUESTS: { value: "65336", otherwise: "Bun's outbound connection pool stays at 256" },
  /**
   * Bun's allocator (its fork of mimalloc) discards the free blocks inside pages still in use each time a thread's
   * event loop goes idle, on its scavenger thread; the next allocations there fault the pages back in. On a gateway
   * whose loop idles between bursts that is work on the proxy's own core for every burst: 9–12 % of proxied
   * throughput and a longer tail (docs/performance.md "The allocator", scripts/bench/wrk.ts --ab). Off, as upstream
   * mimalloc has it; pages wholly free are still returned to the system after the allocator's purge delay.
   */
  MIMALLOC_PURGE_HOLES: { value: "0", otherwise: "Bun's allocator keeps discarding free blocks of used pages when idle" },
};

function tuneRuntime(): string | undefined {
  const execve = (process as { execve?: (file: string, args: string[], env: Record<string, string | undefined>) => never }).execve;
  const missing = Object.keys(RUNTIME_ENV).filter((name) => process.env[name] === undefined);
  if (missing.length === 0 || typeof execve !== "function" || process.platform === "win32") return undefined;
  // A compiled binary sees argv [bun, /$bunfs/root/<name>, …args]; the OS started it as [path, …args].
  const compiled = Bun.main.startsWith("/$bunfs/") || Bun.main.startsWith("B:/~BUN/");
  // From source, Bun's own flags (execArgv: --cpu-prof…) go along.
  const args = compiled ? [process.execPath, ...process.argv.slice(2)] : [process.execPath, ...process.execArgv, ...process.argv.slice(1)];
  try {
    execve(process.execPath, args, { ...process.env, ...Object.fromEntries(missing.map((name) => [name, RUNTIME_ENV[name]!.value])) });
  } catch (e) {
    // the executable cannot be started again as it was (under qemu-user without binfmt_misc: ENOEXEC): serve anyway
    const code = (e as { code?: string }).code ?? "error";
    const otherwise = missing.map((name) => RUNTIME_ENV[name]!.otherwise).join("; ");
    return `could not re-execute with the runtime's settings (${code}): ${otherwise}; set ${missing.join(" and ")} to choose and skip the re-exec`;
  }
  return undefined;
}
