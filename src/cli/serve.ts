/**
 * `ath serve` — run the gateway (DESIGN.md §4). Flags win over `ATH_*` environment variables, which win over
 * defaults. Prints exactly one line `listening on <base_url>` on stdout when ready; SIGTERM/SIGINT stop it
 * gracefully (stop accepting, finish in-flight requests, close the store).
 */
import { defineCommand, type ArgsDef } from "citty";
import { consola } from "consola";
import { homedir } from "node:os";
import { join } from "node:path";
import pkg from "../../package.json" with { type: "json" };
import { usageError } from "../agent/errors.ts";
import { LIMITS, type ProviderConfig } from "../protocol/index.ts";

const args = {
  host: { type: "string", description: "Address to listen on (env ATH_HOST; default 127.0.0.1)", valueHint: "addr" },
  port: { type: "string", description: "Port (env ATH_PORT; 0 picks a free one)", valueHint: "n" },
  "base-url": { type: "string", description: "Public base URL (env ATH_BASE_URL)", valueHint: "url" },
  providers: { type: "string", description: "Providers JSON file, ${ENV} interpolated (env ATH_PROVIDERS_FILE)", valueHint: "file" },
  "data-dir": { type: "string", description: "State directory (env ATH_DATA_DIR; default $ATH_HOME/gateway)", valueHint: "dir" },
  db: { type: "string", description: "sqlite:PATH or postgres://… (env ATH_DATABASE_URL)", valueHint: "url" },
  "admin-token": { type: "string", description: "Admin API token (env ATH_ADMIN_TOKEN; generated once if unset)", valueHint: "token" },
  approval: { type: "enum", options: ["auto", "manual"], description: "Agent approval policy (env ATH_APPROVAL)" },
  "session-ttl": { type: "string", description: "Consent session lifetime, seconds (max 600)", valueHint: "s" },
  "token-ttl": { type: "string", description: "ATH token lifetime, seconds (default 3600)", valueHint: "s" },
  "upstream-timeout": { type: "string", description: "Provider API timeout, seconds (default 30)", valueHint: "s" },
  "sweep-interval": { type: "string", description: "Seconds between sweeps of expired rows (default 60)", valueHint: "s" },
  "sweep-retention": { type: "string", description: "Seconds revoked/expired tokens and dead grants are kept (default 86400)", valueHint: "s" },
  "audit-retention": { type: "string", description: "Days audit events are kept (default 90)", valueHint: "days" },
  "strict-scopes": { type: "boolean", description: "Refuse proxy calls to providers without scope_rules" },
  "tls-cert": { type: "string", description: "TLS certificate (PEM)", valueHint: "file" },
  "tls-key": { type: "string", description: "TLS private key (PEM)", valueHint: "file" },
  dev: { type: "boolean", description: "Development: allow http:// and loopback agent identity documents" },
  demo: { type: "boolean", description: "Mount the sandbox provider `demo` under /demo" },
  insecure: { type: "boolean", description: "Allow plain http on a non-loopback address" },
  "trust-proxy": { type: "boolean", description: "TLS is terminated by a proxy in front (allows plain http)" },
} as const satisfies ArgsDef;

export default defineCommand({
  meta: { name: "serve", description: "Run the ATH gateway" },
  args,
  async run({ args: a }) {
    const env = process.env;
    const str = (flag: string | undefined, name: string) => (flag !== undefined && flag !== "" ? flag : env[name] || undefined);
    const host = str(a.host, "ATH_HOST") ?? "127.0.0.1";
    const port = int(str(a.port, "ATH_PORT") ?? "8787", "--port", 0, 65535);
    const tlsCert = a["tls-cert"];
    const tlsKey = a["tls-key"];
    if (Boolean(tlsCert) !== Boolean(tlsKey)) throw usageError("--tls-cert and --tls-key go together");
    const loopback = host === "127.0.0.1" || host === "::1" || host === "localhost";
    if (!tlsCert && !loopback && !a.insecure && !a["trust-proxy"]) {
      throw usageError(`refusing plain http on ${host}: use --tls-cert/--tls-key, --trust-proxy (TLS in front), or --insecure`);
    }
    const baseUrl = str(a["base-url"], "ATH_BASE_URL");
    if (baseUrl !== undefined && !/^https?:\/\/[^/]+/.test(baseUrl)) throw usageError(`--base-url must be an http(s) URL, got "${baseUrl}"`);
    const sessionTtl = int(a["session-ttl"] ?? "600", "--session-ttl", 1, LIMITS.sessionTtlMaxSeconds);
    const tokenTtl = int(a["token-ttl"] ?? String(LIMITS.tokenTtlDefaultSeconds), "--token-ttl", 1, 366 * 24 * 3600);
    const upstreamTimeout = int(a["upstream-timeout"] ?? "30", "--upstream-timeout", 1, 600);
    const sweepInterval = int(a["sweep-interval"] ?? "60", "--sweep-interval", 1, 86400);
    const sweepRetention = int(a["sweep-retention"] ?? "86400", "--sweep-retention", 1, 366 * 24 * 3600);
    const auditRetention = int(a["audit-retention"] ?? "90", "--audit-retention", 1, 36500);
    const approval = (a.approval ?? env.ATH_APPROVAL ?? "auto") as string;
    if (approval !== "auto" && approval !== "manual") throw usageError(`ATH_APPROVAL must be auto or manual, got "${approval}"`);
    const dataDir = str(a["data-dir"], "ATH_DATA_DIR") ?? join(env.ATH_HOME || join(homedir(), ".ath"), "gateway");

    const { loadProvidersFile, ConfigError } = await import("../gateway/providers/file.ts");
    let providers: Record<string, ProviderConfig> = {};
    const providersFile = str(a.providers, "ATH_PROVIDERS_FILE");
    try {
      if (providersFile) providers = loadProvidersFile(providersFile);
    } catch (e) {
      if (e instanceof ConfigError) throw usageError(e.message);
      throw e;
    }

    const log = logger();
    const { startGateway } = await import("../gateway/index.ts");
    const running = await startGateway({
      host,
      port,
      ...(baseUrl ? { baseUrl } : {}),
      dataDir,
      ...(str(a.db, "ATH_DATABASE_URL") ? { db: str(a.db, "ATH_DATABASE_URL") } : {}),
      providers,
      ...(str(a["admin-token"], "ATH_ADMIN_TOKEN") ? { adminToken: str(a["admin-token"], "ATH_ADMIN_TOKEN") } : {}),
      ...(env.ATH_MASTER_KEY ? { masterKey: env.ATH_MASTER_KEY } : {}),
      ...(tlsCert && tlsKey ? { tls: { cert: tlsCert, key: tlsKey } } : {}),
      version: pkg.version,
      dev: Boolean(a.dev),
      demo: Boolean(a.demo),
      approval,
      sessionTtlSeconds: sessionTtl,
      tokenTtlSeconds: tokenTtl,
      strictScopes: Boolean(a["strict-scopes"]),
      upstreamTimeoutMs: upstreamTimeout * 1000,
      sweepIntervalMs: sweepInterval * 1000,
      auditRetentionMs: auditRetention * 24 * 3600 * 1000,
      sweepRetentionMs: sweepRetention * 1000,
      log,
    });
    if (a.dev) consola.warn("--dev: http:// and loopback agent identity documents are accepted. Never use this in production.");
    if (running.generatedAdminToken) {
      // Printed once, at the first start: only its hash is kept.
      process.stderr.write(`admin token (shown once, store it now): ${running.generatedAdminToken}\n`);
    }
    // Handlers go in before the ready line: a supervisor may signal as soon as it reads it.
    const stopped = new Promise<void>((resolve) => {
      const stop = () => {
        process.off("SIGTERM", stop);
        process.off("SIGINT", stop);
        running.stop().then(resolve, (err) => {
          log.error("shutdown failed", err);
          resolve();
        });
      };
      process.on("SIGTERM", stop);
      process.on("SIGINT", stop);
    });
    await Bun.sleep(0); // let the runtime install the signal handlers
    process.stdout.write(`listening on ${running.url}\n`);
    await stopped;
  },
});

// internal

function int(value: string, flag: string, min: number, max: number): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || n < min || n > max) throw usageError(`${flag} must be an integer from ${min} to ${max}, got "${value}"`);
  return n;
}

function logger() {
  const log = consola.withTag("ath");
  return {
    info: (msg: string, data?: Record<string, unknown>) => log.info(msg, data ?? ""),
    warn: (msg: string, data?: Record<string, unknown>) => log.warn(msg, data ?? ""),
    // Only the error's name and message: causes may carry request data.
    error: (msg: string, err?: unknown) => log.error(msg, err instanceof Error ? `${err.name}: ${err.message}` : ""),
  };
}
