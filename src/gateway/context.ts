/**
 * What every gateway handler gets: the options, the store, the sealer, the agent key resolver, a clock, the outbound
 * `fetch`, a logger — and, per request, a `Call` (the request, its route row and path parameters).
 */
import type { Store } from "../store/types.ts";
import type { Sealer } from "./crypto/sealing.ts";
import type { KeyResolver } from "./identity/agent-keys.ts";
import type { AuditChain } from "./domain/audit-chain.ts";
import type { AuditQueue } from "./ops/audit-queue.ts";
import type { WebhookDeliverer } from "./ops/webhooks.ts";
import type { Tracer } from "./ops/tracing.ts";
import type { Metrics } from "./ops/metrics.ts";
import type { Limiter } from "./ops/rate-limit.ts";
import type { ApprovalMode } from "./rules/policy.ts";

export interface GatewayOptions {
  /** Public base URL, no trailing slash: `http://127.0.0.1:8787`. */
  baseUrl: string;
  /** `native`: the gateway fronts one app, whose provider id is `appId` (DESIGN §7). */
  mode: "gateway" | "native";
  version: string;
  /** Allows http:// and loopback agent identity documents. */
  dev: boolean;
  approval: ApprovalMode;
  sessionTtlSeconds: number;
  tokenTtlSeconds: number;
  /** A refresh family's life from the consent (DESIGN §17); default LIMITS.refreshTtlDefaultSeconds. */
  refreshTtlSeconds?: number;
  /** A refresh family dies this long unused; default LIMITS.refreshIdleDefaultSeconds. */
  refreshIdleSeconds?: number;
  /** `--require-dpop`: bearer tokens are refused everywhere (DESIGN §17). */
  requireDpop?: boolean;
  /** Reject proxy requests to providers that declare no scope_rules. */
  strictScopes: boolean;
  /** How long the proxy waits for upstream response headers. */
  upstreamTimeoutMs: number;
  /**
   * Proxied requests waiting on one provider's API at once; one more is refused at once with 502
   * UPSTREAM_UNAVAILABLE (reason upstream_concurrency), so a hanging provider cannot hold every outbound connection.
   */
  upstreamConcurrency: number;
  /** SHA-256 of the admin token. */
  adminTokenHash: string;
  /** SHA-256 of the introspection token, if one was configured. */
  introspectionTokenHash: string | null;
  /** Largest body of a request that needs a person's approval (DESIGN §15), bytes; default 1 MiB. */
  maxApprovalBody?: number;
  /** Largest body a policy condition reads (DESIGN §16), bytes; default 1 MiB. */
  maxPolicyBody?: number;
  /** Native mode: the one provider's id (the app id); null in gateway mode. */
  appId: string | null;
  /** A proxy in front terminates TLS: the client IP is the last hop of X-Forwarded-For. */
  trustProxy: boolean;
  /** SHA-256 of `--metrics-token`, if given (the admin token also opens /metrics). */
  metricsTokenHash: string | null;
  /** `--metrics-public`: /metrics needs no token. */
  metricsPublic: boolean;
  /** Largest proxied request body, in bytes (`--max-proxy-body`). */
  maxProxyBody: number;
}

export type LogLevel = "debug" | "info" | "warn" | "error";
export type LogFields = Record<string, unknown>;

/** The one log writer (ops/log.ts): it keeps secrets out of every line itself. */
export interface Logger {
  enabled(level: LogLevel): boolean;
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  /** Logs the error's name and message only. */
  error(msg: string, err?: unknown, fields?: LogFields): void;
  /** The start-up line: `msg` alone in text, a record in JSON. */
  announce(msg: string): void;
}

/** Outbound HTTP: providers' OAuth and API endpoints, agent identity documents. Injected so tests can serve them. */
export type Fetch = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

export interface Gateway {
  opts: GatewayOptions;
  store: Store;
  sealer: Sealer;
  keys: KeyResolver;
  /** The clock: epoch milliseconds. Every expiry decision reads it. */
  now: () => number;
  fetch: Fetch;
  log: Logger;
  /** Audit events on their way to the store, in batches (domain/audit.ts writes here). */
  auditLog: AuditQueue;
  /** The audit hash chain's key and checkpoints (DESIGN §20). */
  auditChain: AuditChain;
  /** traceparent in and out, spans exported over OTLP when configured (DESIGN §20). */
  tracer: Tracer;
  /** Drains the webhook outbox (DESIGN §20); set by createGateway once the gateway exists. */
  webhooks?: WebhookDeliverer;
  metrics: Metrics;
  limiter: Limiter;
  /**
   * Lets a request outlive the listener's 10 s idle timeout (DESIGN §14), for work that legitimately waits: set by
   * `ath serve` (Bun's `server.timeout`); absent in process, where there is no socket.
   */
  extendTimeout?: (req: Request, seconds: number) => void;
  /** Routes `/demo/…` when `ath serve --demo` is on. */
  demo?: { fetch(req: Request): Promise<Response> };
}

/** What a route answers with when something goes wrong: JSON for the API and the proxy, an HTML page for browsers. */
export type RouteKind = "api" | "page" | "proxy";

/** A route's caller check, applied by the pipeline before the handler runs (app.ts supplies the implementations). */
export type RouteAuth = "none" | "admin" | "introspection" | "metrics";

/** The budget a route's requests count against (DESIGN §10). */
export type RouteLimit = "register" | "auth" | "proxy";

/** One row of the route table (routes.ts). */
export interface Route {
  /** Stable name, e.g. `token`, `admin.providers.get`. */
  name: string;
  /** An HTTP method, or `*` for any (the proxy). HEAD is answered by a GET route. */
  method: string;
  /** Template: literal segments, `{param}` for one segment, a final `*` for the (raw) rest of the path. */
  path: string;
  kind: RouteKind;
  auth: RouteAuth;
  limit?: RouteLimit;
  /** Largest request body the handler will read, in bytes (protocol bodies; the proxy streams). */
  maxBody: number;
  handler: Handler;
}

export type Handler = (call: Call) => Promise<Response> | Response;

/** One request on its way through the pipeline to its handler. */
export interface Call {
  gw: Gateway;
  req: Request;
  route: Route;
  /** `{param}` values, percent-decoded; `*` holds the rest of the path as sent (still percent-encoded). */
  params: Record<string, string>;
  /** The raw query string, with its `?` (or ""). */
  search: string;
  /** The client's IP address as the server saw it (null in process). */
  peer: string | null;
  /** The request id (X-Request-Id): taken from the request when sane, else generated. */
  id: string;
  /** The client's IP address (the last X-Forwarded-For hop under --trust-proxy), or "unknown". */
  ip: string;
  /**
   * Tells the pipeline who the request is for, once the handler knows: the access record names them, and the first
   * time a `client_id` is given the route's rate budget (`limit`: auth, proxy) is charged to it — 429 when spent.
   */
  identify(who: { client_id?: string; provider_id?: string }): Promise<void>;
}
