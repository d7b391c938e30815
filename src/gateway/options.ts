/**
 * The options of `ath serve`, in one place: every flag (with its `ATH_*` variable, help text and default) and one zod
 * schema that turns flags-over-environment into typed options, reporting every problem at once, each naming its
 * flag. `cli/commands/serve.ts` only hands the parsed flags and the environment in.
 */
import { homedir } from "node:os";
import { join } from "node:path";
import { z } from "zod";
import { LIMITS } from "../protocol/index.ts";
import { parseRate, type Rate } from "./ops/rate-limit.ts";

/** The flags of `ath serve` (citty's argument shape, plus the environment variable each falls back to). */
export const SERVE_FLAGS = {
  host: { type: "string", env: "ATH_HOST", description: "Address to listen on (env ATH_HOST; default 127.0.0.1)", valueHint: "addr" },
  port: { type: "string", env: "ATH_PORT", description: "Port (env ATH_PORT; default 8787; 0 picks a free one)", valueHint: "n" },
  "base-url": { type: "string", env: "ATH_BASE_URL", description: "Public base URL (env ATH_BASE_URL)", valueHint: "url" },
  providers: { type: "string", env: "ATH_PROVIDERS_FILE", description: "Providers JSON file, ${ENV} interpolated (env ATH_PROVIDERS_FILE)", valueHint: "file" },
  "data-dir": { type: "string", env: "ATH_DATA_DIR", description: "State directory (env ATH_DATA_DIR; default $ATH_HOME/gateway)", valueHint: "dir" },
  db: { type: "string", env: "ATH_DATABASE_URL", description: "sqlite:PATH or postgres://… (env ATH_DATABASE_URL)", valueHint: "url" },
  "admin-token": { type: "string", env: "ATH_ADMIN_TOKEN", description: "Admin API token (env ATH_ADMIN_TOKEN; generated once if unset)", valueHint: "token" },
  mode: { type: "enum", env: "ATH_MODE", options: ["gateway", "native"] as string[], description: "gateway, or native: front one app, the single provider of --providers (env ATH_MODE)" },
  "introspection-token": { type: "string", env: "ATH_INTROSPECTION_TOKEN", description: "Bearer token for POST /ath/introspect (env ATH_INTROSPECTION_TOKEN; the admin token works too)", valueHint: "token" },
  approval: { type: "enum", env: "ATH_APPROVAL", options: ["auto", "manual"] as string[], description: "Agent approval policy (env ATH_APPROVAL)" },
  "session-ttl": { type: "string", description: "Consent session lifetime, seconds (max 600)", valueHint: "s" },
  "token-ttl": { type: "string", description: "ATH token lifetime, seconds (default 3600)", valueHint: "s" },
  "refresh-ttl": { type: "string", description: "Refresh family lifetime from the consent, seconds (default 2592000 = 30 d; max 366 d)", valueHint: "s" },
  "refresh-idle": { type: "string", description: "A refresh family dies unused this long, seconds (default 604800 = 7 d; ≤ --refresh-ttl)", valueHint: "s" },
  "require-dpop": { type: "boolean", description: "Refuse bearer tokens: every token must be DPoP-bound to the agent's key (RFC 9449)" },
  "upstream-timeout": { type: "string", description: "Provider API timeout, seconds (default 30)", valueHint: "s" },
  "upstream-concurrency": { type: "string", env: "ATH_UPSTREAM_CONCURRENCY", description: "Proxied requests in flight per provider; beyond, 502 at once (env ATH_UPSTREAM_CONCURRENCY; default 256)", valueHint: "n" },
  "max-connections-per-ip": { type: "string", env: "ATH_MAX_CONNECTIONS_PER_IP", description: "Requests in flight per client IP; beyond, 429 at once (env ATH_MAX_CONNECTIONS_PER_IP; default 256)", valueHint: "n" },
  "max-approval-body": { type: "string", env: "ATH_MAX_APPROVAL_BODY", description: "Largest body of a request that needs a person's approval, bytes (env ATH_MAX_APPROVAL_BODY; default 1 MiB)", valueHint: "bytes" },
  "max-policy-body": { type: "string", env: "ATH_MAX_POLICY_BODY", description: "Largest body a policy condition reads, bytes (env ATH_MAX_POLICY_BODY; default 1 MiB)", valueHint: "bytes" },
  "sweep-interval": { type: "string", description: "Seconds between sweeps of expired rows (default 60)", valueHint: "s" },
  "sweep-retention": { type: "string", description: "Seconds revoked/expired tokens, dead grants and agents without any approved scope are kept (default 86400)", valueHint: "s" },
  "audit-retention": { type: "string", description: "Days audit events are kept (default 90)", valueHint: "days" },
  "strict-scopes": { type: "boolean", description: "Refuse proxy calls to providers without scope_rules" },
  "tls-cert": { type: "string", description: "TLS certificate (PEM)", valueHint: "file" },
  "tls-key": { type: "string", description: "TLS private key (PEM)", valueHint: "file" },
  dev: { type: "boolean", description: "Development: allow http:// and loopback agent identity documents" },
  demo: { type: "boolean", description: "Mount the sandbox provider `demo` under /demo: a notes API, and an MCP server fronted at /mcp/demo" },
  insecure: { type: "boolean", description: "Allow plain http on a non-loopback address" },
  "trust-proxy": { type: "boolean", description: "TLS is terminated by a proxy in front (allows plain http; the client IP is the last X-Forwarded-For hop)" },
  "log-format": { type: "enum", env: "ATH_LOG_FORMAT", options: ["text", "json"] as string[], description: "Log lines as text or JSON (env ATH_LOG_FORMAT; default text on a terminal, else json)" },
  "log-level": { type: "enum", env: "ATH_LOG_LEVEL", options: ["debug", "info", "warn", "error"] as string[], description: "Least severe level logged (env ATH_LOG_LEVEL; default info)" },
  "metrics-token": { type: "string", env: "ATH_METRICS_TOKEN", description: "Bearer token for GET /metrics (env ATH_METRICS_TOKEN; the admin token works too)", valueHint: "token" },
  "metrics-public": { type: "boolean", description: "GET /metrics without a token" },
  "rate-limit-register": { type: "string", env: "ATH_RATE_LIMIT_REGISTER", description: "Registrations per client IP, N/s|m|h or 0 = off (env ATH_RATE_LIMIT_REGISTER; default 20/m)", valueHint: "N/unit" },
  "rate-limit-auth": { type: "string", env: "ATH_RATE_LIMIT_AUTH", description: "authorize + token calls per client_id, N/s|m|h or 0 = off (env ATH_RATE_LIMIT_AUTH; default 60/m)", valueHint: "N/unit" },
  "rate-limit-proxy": { type: "string", env: "ATH_RATE_LIMIT_PROXY", description: "Proxied requests per client_id, N/s|m|h or 0 = off (env ATH_RATE_LIMIT_PROXY; default 100/s)", valueHint: "N/unit" },
  "max-body": { type: "string", env: "ATH_MAX_BODY", description: "Largest protocol request body, bytes (env ATH_MAX_BODY; default 65536)", valueHint: "bytes" },
  "otlp-endpoint": { type: "string", env: "OTEL_EXPORTER_OTLP_ENDPOINT", description: "Export traces over OTLP/HTTP JSON to <URL>/v1/traces (env OTEL_EXPORTER_OTLP_ENDPOINT)", valueHint: "url" },
  "max-delegation-depth": { type: "string", env: "ATH_MAX_DELEGATION_DEPTH", description: "Delegations from one root token, at most (env ATH_MAX_DELEGATION_DEPTH; default 3; 0: none)", valueHint: "n" },
  "max-proxy-body": { type: "string", env: "ATH_MAX_PROXY_BODY", description: "Largest proxied request body, bytes (env ATH_MAX_PROXY_BODY; default 33554432)", valueHint: "bytes" },
  "mcp-allowed-origins": {
    type: "string",
    env: "ATH_MCP_ALLOWED_ORIGINS",
    description: "Browser origins besides --base-url's that may call /mcp/*, comma-separated (env ATH_MCP_ALLOWED_ORIGINS)",
    valueHint: "origins",
  },
} as const satisfies Record<string, FlagSpec>;

export type ServeOptions = z.output<typeof ServeOptions>;

/** A flag or option problem; the message lists every one, each naming its flag. */
export class OptionsError extends Error {
  override readonly name = "OptionsError";
}

/**
 * Flags win over `ATH_*` variables, which win over defaults. `env` also supplies ATH_HOME (the default data dir's
 * parent) and ATH_MASTER_KEY.
 */
export function resolveServeOptions(flags: Record<string, unknown>, env: Record<string, string | undefined>): ServeOptions {
  const raw: Record<string, unknown> = {};
  for (const [name, spec] of Object.entries(SERVE_FLAGS) as [keyof typeof SERVE_FLAGS, FlagSpec][]) {
    const given = flags[name];
    const fromEnv = spec.env ? env[spec.env] : undefined;
    raw[name] = given !== undefined && given !== "" ? given : fromEnv !== undefined && fromEnv !== "" ? fromEnv : undefined;
  }
  raw.home = env.ATH_HOME || join(homedir(), ".ath");
  raw["master-key"] = env.ATH_MASTER_KEY || undefined;
  const parsed = ServeOptions.safeParse(raw);
  if (parsed.success) return parsed.data;
  throw new OptionsError(parsed.error.issues.map((i) => i.message).join("\n"));
}

// internal

interface FlagSpec {
  type: "string" | "boolean" | "enum";
  description: string;
  valueHint?: string;
  options?: string[];
  env?: string;
}

/** An integer flag within [min, max], with its default. */
function integer(flag: string, min: number, max: number, fallback: number) {
  return z
    .string()
    .optional()
    .transform((v, ctx) => {
      if (v === undefined) return fallback;
      if (!/^\d+$/.test(v) || Number(v) < min || Number(v) > max) {
        ctx.addIssue({ code: "custom", message: `--${flag} must be an integer from ${min} to ${max}, got "${v}"` });
        return z.NEVER;
      }
      return Number(v);
    });
}

function enumOf<T extends string>(flag: string, env: string, values: readonly [T, ...T[]], fallback: T) {
  return z
    .string()
    .optional()
    .transform((v, ctx) => {
      if (v === undefined) return fallback;
      if (!(values as readonly string[]).includes(v)) {
        ctx.addIssue({ code: "custom", message: `--${flag} (or ${env}) must be ${values.join(" or ")}, got "${v}"` });
        return z.NEVER;
      }
      return v as T;
    });
}

/** A rate flag: `N/unit` (s, m, h) or `0` (off); null when off. */
function rate(flag: string, fallback: string) {
  return z
    .string()
    .optional()
    .transform((v, ctx): Rate | null => {
      const r = parseRate(v ?? fallback);
      if (r === undefined) {
        ctx.addIssue({ code: "custom", message: `--${flag} must be N/s, N/m, N/h (N from 1 to 999999999) or 0 (off), got "${v}"` });
        return z.NEVER;
      }
      return r;
    });
}

/** A comma-separated list of http(s) origins (`scheme://host[:port]`, nothing after), each kept in its serialized form. */
function origins(flag: string) {
  return z
    .string()
    .optional()
    .transform((v, ctx): string[] => {
      const out: string[] = [];
      for (const given of (v ?? "").split(",").map((s) => s.trim()).filter(Boolean)) {
        let url: URL | null = null;
        try {
          url = new URL(given);
        } catch {
          url = null;
        }
        if (url === null || (url.protocol !== "https:" && url.protocol !== "http:") || url.origin !== given.replace(/\/$/, "")) {
          ctx.addIssue({ code: "custom", message: `--${flag} must list origins like https://app.example.com (scheme, host, port; no path), got "${given}"` });
          return z.NEVER;
        }
        out.push(url.origin);
      }
      return out;
    });
}

const flag = z.boolean().optional().transform((v) => v === true);
const text = z.string().optional();

/** DESIGN §14: a secret the operator chooses has at least this many characters (the token is never echoed). */
export const MIN_OPERATOR_SECRET = 24;

/** An operator-chosen secret (`--admin-token`, `--metrics-token`): absent, or at least MIN_OPERATOR_SECRET characters. */
function operatorSecret(flag: string, env: string) {
  return z
    .string()
    .optional()
    .superRefine((v, ctx) => {
      if (v !== undefined && v.length < MIN_OPERATOR_SECRET) {
        ctx.addIssue({
          code: "custom",
          message: `--${flag} (or ${env}) must be at least ${MIN_OPERATOR_SECRET} characters, got ${v.length}: use a random one, e.g. \`openssl rand -base64 32\``,
        });
      }
    });
}

const LOOPBACK_HOSTS = ["127.0.0.1", "::1", "localhost"];

const ServeOptions = z
  .object({
    host: z.string().default("127.0.0.1"),
    port: integer("port", 0, 65535, 8787),
    "base-url": text,
    providers: text,
    "data-dir": text,
    db: text,
    "admin-token": operatorSecret("admin-token", "ATH_ADMIN_TOKEN"),
    mode: enumOf("mode", "ATH_MODE", ["gateway", "native"], "gateway"),
    "introspection-token": text,
    approval: enumOf("approval", "ATH_APPROVAL", ["auto", "manual"], "auto"),
    "session-ttl": integer("session-ttl", 1, LIMITS.sessionTtlMaxSeconds, LIMITS.sessionTtlMaxSeconds),
    "token-ttl": integer("token-ttl", 1, 366 * 24 * 3600, LIMITS.tokenTtlDefaultSeconds),
    "refresh-ttl": integer("refresh-ttl", 1, LIMITS.refreshMaxSeconds, LIMITS.refreshTtlDefaultSeconds),
    "refresh-idle": z.string().optional(),
    "require-dpop": flag,
    "upstream-timeout": integer("upstream-timeout", 1, 600, 30),
    "upstream-concurrency": integer("upstream-concurrency", 1, 10_000, 256),
    "max-connections-per-ip": integer("max-connections-per-ip", 1, 100_000, 256),
    "max-approval-body": integer("max-approval-body", 0, 64 * 1024 * 1024, 1024 * 1024),
    "max-policy-body": integer("max-policy-body", 0, 64 * 1024 * 1024, 1024 * 1024),
    "sweep-interval": integer("sweep-interval", 1, 86400, 60),
    "sweep-retention": integer("sweep-retention", 1, 366 * 24 * 3600, 86400),
    "audit-retention": integer("audit-retention", 1, 36500, 90),
    "strict-scopes": flag,
    "tls-cert": text,
    "tls-key": text,
    dev: flag,
    demo: flag,
    insecure: flag,
    "trust-proxy": flag,
    "log-format": z
      .string()
      .optional()
      .transform((v, ctx): "text" | "json" | undefined => {
        if (v !== undefined && v !== "text" && v !== "json") {
          ctx.addIssue({ code: "custom", message: `--log-format (or ATH_LOG_FORMAT) must be text or json, got "${v}"` });
          return z.NEVER;
        }
        return v;
      }),
    "log-level": enumOf("log-level", "ATH_LOG_LEVEL", ["debug", "info", "warn", "error"], "info"),
    "metrics-token": operatorSecret("metrics-token", "ATH_METRICS_TOKEN"),
    "metrics-public": flag,
    "rate-limit-register": rate("rate-limit-register", "20/m"),
    "rate-limit-auth": rate("rate-limit-auth", "60/m"),
    "rate-limit-proxy": rate("rate-limit-proxy", "100/s"),
    "max-body": integer("max-body", 1024, 64 * 1024 * 1024, LIMITS.maxBodyBytes),
    "max-proxy-body": integer("max-proxy-body", 1024, 1024 ** 4, 32 * 1024 * 1024),
    "max-delegation-depth": integer("max-delegation-depth", 0, 16, 3),
    "otlp-endpoint": text,
    "mcp-allowed-origins": origins("mcp-allowed-origins"),
    home: z.string(),
    "master-key": text,
  })
  .superRefine((o, ctx) => {
    const base = o["base-url"];
    if (base !== undefined && !/^https?:\/\/[^/]+/.test(base)) ctx.addIssue({ code: "custom", message: `--base-url must be an http(s) URL, got "${base}"` });
    const otlp = o["otlp-endpoint"];
    if (otlp !== undefined && !/^https?:\/\/[^/]+/.test(otlp)) ctx.addIssue({ code: "custom", message: `--otlp-endpoint (or OTEL_EXPORTER_OTLP_ENDPOINT) must be an http(s) URL, got "${otlp}"` });
    const idle = o["refresh-idle"];
    if (idle !== undefined && (!/^\d+$/.test(idle) || Number(idle) < 1 || Number(idle) > o["refresh-ttl"])) {
      ctx.addIssue({ code: "custom", message: `--refresh-idle must be an integer from 1 to --refresh-ttl (${o["refresh-ttl"]}), got "${idle}"` });
    }
    if (Boolean(o["tls-cert"]) !== Boolean(o["tls-key"])) ctx.addIssue({ code: "custom", message: "--tls-cert and --tls-key go together" });
    if (!o["tls-cert"] && !LOOPBACK_HOSTS.includes(o.host) && !o.insecure && !o["trust-proxy"]) {
      ctx.addIssue({
        code: "custom",
        message: `refusing plain http on ${o.host}: use --tls-cert/--tls-key, --trust-proxy (TLS in front), or --insecure`,
      });
    }
  })
  .transform((o) => ({
    host: o.host,
    port: o.port,
    /** Public base URL without a trailing slash; when absent, derived from the listener once it is bound. */
    baseUrl: o["base-url"]?.replace(/\/+$/, ""),
    providersFile: o.providers,
    dataDir: o["data-dir"] ?? join(o.home, "gateway"),
    /** `sqlite:PATH` or `postgres://…`; default `sqlite:<dataDir>/ath.db`. */
    db: o.db,
    adminToken: o["admin-token"],
    mode: o.mode,
    introspectionToken: o["introspection-token"],
    masterKey: o["master-key"],
    tls: o["tls-cert"] && o["tls-key"] ? { cert: o["tls-cert"], key: o["tls-key"] } : undefined,
    approval: o.approval,
    sessionTtlSeconds: o["session-ttl"],
    tokenTtlSeconds: o["token-ttl"],
    refreshTtlSeconds: o["refresh-ttl"],
    /** Default 7 d, but never past the family's whole life. */
    refreshIdleSeconds: o["refresh-idle"] !== undefined ? Number(o["refresh-idle"]) : Math.min(LIMITS.refreshIdleDefaultSeconds, o["refresh-ttl"]),
    requireDpop: o["require-dpop"],
    upstreamTimeoutMs: o["upstream-timeout"] * 1000,
    /** Proxied requests waiting on one provider's API at once (DESIGN §14). */
    upstreamConcurrency: o["upstream-concurrency"],
    /** Requests in flight from one peer address at once (DESIGN §14). */
    maxConnectionsPerIp: o["max-connections-per-ip"],
    maxApprovalBody: o["max-approval-body"],
    maxPolicyBody: o["max-policy-body"],
    sweepIntervalMs: o["sweep-interval"] * 1000,
    /** Revoked/expired tokens and dead grants are kept this long (audit and debugging). */
    sweepRetentionMs: o["sweep-retention"] * 1000,
    /** Audit events are kept this long: an unauthenticated caller can add events, so they cannot grow forever. */
    auditRetentionMs: o["audit-retention"] * 24 * 3600 * 1000,
    strictScopes: o["strict-scopes"],
    dev: o.dev,
    demo: o.demo,
    trustProxy: o["trust-proxy"],
    /** DESIGN §10: text on a terminal, JSON otherwise (a log collector). */
    logFormat: o["log-format"] ?? (process.stdout.isTTY ? "text" : "json"),
    logLevel: o["log-level"],
    metricsToken: o["metrics-token"],
    metricsPublic: o["metrics-public"],
    rateLimits: {
      ...(o["rate-limit-register"] ? { register: o["rate-limit-register"] } : {}),
      ...(o["rate-limit-auth"] ? { auth: o["rate-limit-auth"] } : {}),
      ...(o["rate-limit-proxy"] ? { proxy: o["rate-limit-proxy"] } : {}),
    },
    maxBody: o["max-body"],
    maxProxyBody: o["max-proxy-body"],
    /** DESIGN §23: exchanges from a root token. */
    maxDelegationDepth: o["max-delegation-depth"],
    /** OTLP/HTTP base URL for traces (DESIGN §20); `/v1/traces` is appended. */
    otlpEndpoint: o["otlp-endpoint"],
    /** Origins besides the gateway's own that browsers may call /mcp/* from (DESIGN §21). */
    mcpAllowedOrigins: o["mcp-allowed-origins"],
  }));
