/**
 * What every gateway handler gets: the options, the store, the sealer, the agent key resolver, a clock, the outbound
 * `fetch`, a logger — and, per request, a `Call` (the request, its route row and path parameters).
 */
import type { McpGroups } from "../protocol/mcp-groups.ts";
import type { AuditPublicJwk, EndLine } from "../protocol/audit-chain.ts";
import type { AuditCheckpoint, AuditEvent, Store } from "../store/types.ts";

/**
 * The longest a request may stay idle once `Gateway.extendTimeout` let it outlive the listener's 10 s (Bun's maximum
 * for `server.timeout`): the proxy's and the MCP doors' authenticated calls that may wait.
 */
export const LONGEST_IDLE_TIMEOUT_S = 255;

export interface GatewayOptions {
  /** Public base URL, no trailing slash: `http://127.0.0.1:8787`. */
  baseUrl: string;
  /** `native`: the gateway fronts one app, whose provider id is `appId` (DESIGN §7). */
  mode: "gateway" | "native";
  version: string;
  /** Allows http:// and loopback agent identity documents. */
  dev: boolean;
  /** Registration policy: `auto` approves what policy allows; `manual` holds agents for an admin (rules/policy.ts). */
  approval: "auto" | "manual";
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
  /** `--max-delegation-depth` (DESIGN §23): exchanges from a root token; default 3, 0 turns delegation off. */
  maxDelegationDepth?: number;
  /** `--mcp-allowed-origins`: browser origins besides the gateway's own that may call /mcp/* (DESIGN §21). */
  mcpAllowedOrigins?: readonly string[];
  /** DESIGN §22: the providers file's `mcp_groups`, each served at `{base_url}/mcp/g/{group}`. */
  mcpGroups?: McpGroups;
  /** DESIGN §22: the providers file's order of its ids — the order of `{base_url}/mcp`'s members. */
  mcpOrder?: readonly string[];
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
  /**
   * The access record of one answered request (msg "request", level info; ops/log.ts): its fields are the gateway's
   * own — no secret-named field, every string but the request id a route template, a method or an identifier — so it
   * is written without the general redaction's copy and scans.
   */
  access(r: AccessRecord): void;
}

/** One answered request, as the access log records it (in this order). */
export interface AccessRecord {
  request_id: string;
  method: string;
  route: string;
  status: number;
  duration_ms: number;
  client_id?: string | undefined;
  provider_id?: string | undefined;
}

/** Outbound HTTP: providers' OAuth and API endpoints, agent identity documents. Injected so tests can serve them. */
export type Fetch = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

export interface Gateway {
  opts: GatewayOptions;
  store: Store;
  /**
   * The store's read cache (store/cached.ts): whether it is in use, and its generation, which changes with every
   * invalidation — what was worked out from cached reads holds while both stand (proxy/plan.ts). Absent: no cache.
   */
  cache?: { readonly live: boolean; readonly generation: number };
  sealer: Sealer;
  keys: KeyResolver;
  /** The clock: epoch milliseconds. Every expiry decision reads it. */
  now: () => number;
  fetch: Fetch;
  /** The relay's calls to providers' APIs: proxy/http1.ts's client (falling back to `fetch`), or `fetch` when one is injected; both honour `UpstreamInit.canceller`. */
  upstreamFetch: Fetch;
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

/**
 * What a route answers with when something goes wrong (http/pipeline.ts's boundary): ATH JSON for the API and the
 * proxy, an HTML page for browsers, RFC 6749's JSON for OAuth clients, challenges and JSON-RPC errors for MCP clients.
 */
export type RouteKind = "api" | "page" | "proxy" | "oauth" | "mcp";

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
  identify(who: { client_id?: string; provider_id?: string }): void | Promise<void>;
}

// Ports: what handlers and domain functions use of the gateway's services. The implementations (crypto/sealing.ts,
// identity/agent-keys.ts, domain/audit-chain.ts, ops/…) import these; this file imports none of them.

/** Sealing at rest (AES-256-GCM under the master key): crypto/sealing.ts. */
export interface Sealer {
  seal(plaintext: string, aad: string): Promise<string>;
  /** Throws when `sealed` was not sealed under this key with this `aad`. */
  open(sealed: string, aad: string): Promise<string>;
}

/** Agents' public keys (identity/agent-keys.ts). */
export interface KeyResolver {
  /** The key of `agentId` (cached for https ids); AthError INVALID_ATTESTATION when it cannot be had. */
  get(agentId: string): Promise<CryptoKey>;
  /** Re-fetches after a signature failure; null when nothing can be re-fetched (did:key, or fetched < 1 min ago). */
  refresh(agentId: string): Promise<CryptoKey | null>;
}

/** The audit hash chain's key and checkpoints (domain/audit-chain.ts, DESIGN §20). */
export interface AuditChain {
  /** The public key checkpoints are signed with. */
  jwk: AuditPublicJwk;
  /** Signs a checkpoint of the chain's head unless one exists at it; the newest checkpoint, or null (empty chain). */
  checkpoint(): Promise<AuditCheckpoint | null>;
  /** An export's end: the head's checkpoint (null: empty chain) and the closing line signed over that head now. */
  closeExport(): Promise<{ head: AuditCheckpoint | null; end: EndLine }>;
  /** Signs a checkpoint at a given record, unless one is there. */
  checkpointAt(seq: number, hash: string): Promise<void>;
  /** Tells the checkpointer `n` more records were written (the audit queue calls it). */
  written(n: number): void;
  /** Stops the 60 s timer. */
  stop(): void;
}

/** Audit events on their way to the store, in batches (ops/audit-queue.ts). */
export interface AuditQueue {
  push(event: AuditEvent): void;
  /**
   * Adds `item` to the one event this batch holds for `key`: `open(item)` makes that event (queued where its first item
   * came) when the batch has none yet, or the last one holds MAX_GROUP items; `add(event, item)` adds the item to it in
   * place. Many like events (a grantee's proxied calls) become one record of the chain per batch: one hash and one row
   * instead of one per call (DESIGN §20's ≥ 0.95×). `open` and `add` are the caller's fixed functions, `item` the only
   * thing made per call.
   */
  group<I>(key: unknown, item: I, open: (item: I) => AuditEvent, add: (event: AuditEvent, item: I) => void): void;
  /** Writes everything queued so far; resolves once it is in the store (a batch the store refuses is retried until it takes it). */
  flush(): Promise<void>;
  /** Events not yet in the store. */
  pending(): number;
  /** More events wait for the store than the queue's bound: /ready answers 503 (ops/audit-queue.ts). */
  overloaded(): boolean;
  /** At shutdown: flushes, waiting for a store that does not answer at most `timeoutMs`, then logs what was lost. */
  close(timeoutMs: number): Promise<void>;
}

/** The webhook outbox's deliverer (ops/webhooks.ts). */
export interface WebhookDeliverer {
  /** Looks for due deliveries now (after new events were enqueued). */
  nudge(): void;
  /** Stops polling and waits for the attempts in flight. */
  stop(): Promise<void>;
}

/** traceparent in and out; spans exported over OTLP when configured (ops/tracing.ts). */
export interface Tracer {
  readonly exporting: boolean;
  /** Runs `fn` inside the request's span (a child of its `traceparent`, if any). */
  request<T extends Response>(req: Request, fn: () => Promise<T>): Promise<T>;
  /**
   * `handle` as an entry of the listener: `request` around it when the request is traced or carries `traceparent`,
   * else `handle` itself.
   */
  entry<P, S>(handle: (req: Request, peer?: P, settled?: S) => Promise<Response>): (req: Request, peer?: P, settled?: S) => Promise<Response>;
  /** `fetch` whose calls become client spans and carry `traceparent`. */
  wrapFetch(fetch: Fetch): Fetch;
  /** The store with each call a span of the current request (only when exporting). */
  wrapStore(store: Store): Store;
  /** Adds attributes to the current request's span (the route template, once matched). */
  annotate(attributes: Record<string, string | number>): void;
  /** Sends what is queued. */
  flush(): Promise<void>;
  close(): Promise<void>;
}

/** A Prometheus counter (ops/metrics.ts). */
export interface GaugeMetric {
  set(value: number): void;
  get(): number;
  render(): string;
}

export interface CounterMetric {
  inc(labels: readonly string[], by?: number): void;
  /** The series of `labels`, kept by a caller that increments it often (the pipeline's per route and status). */
  series(labels: readonly string[]): { inc(by?: number): void };
  /** The current value (0 when never incremented). */
  get(labels: readonly string[]): number;
  render(): string;
}

/** A Prometheus histogram (ops/metrics.ts). */
export interface HistogramMetric {
  observe(labels: readonly string[], value: number): void;
  /** The series of `labels`, kept by a caller that observes into it often. */
  series(labels: readonly string[]): { observe(value: number): void };
  render(): string;
}

/** Every metric of DESIGN §10, with its labels pinned. */
export interface Metrics {
  http: CounterMetric;
  httpDuration: HistogramMetric;
  proxy: CounterMetric;
  upstreamDuration: HistogramMetric;
  tokensIssued: CounterMetric;
  tokensRevoked: CounterMetric;
  upstreamRefresh: CounterMetric;
  agentsRegistered: CounterMetric;
  rateLimited: CounterMetric;
  /** Per-request approvals (DESIGN §15): requested, approved, denied, used. */
  approvals: CounterMetric;
  /** Calls refused or held because a budget was spent (DESIGN §16). */
  budgetExhausted: CounterMetric;
  /** MCP front door (DESIGN §18): JSON-RPC calls by provider, method, tool (bounded: see mcp/handler.ts) and result. */
  mcpCalls: CounterMetric;
  /** Webhook delivery attempts (DESIGN §20), by result: ok, error. */
  webhookDeliveries: CounterMetric;
  /** Audit batches the store did not take at the first attempt, each attempt (ops/audit-queue.ts retries them). */
  auditRetries: CounterMetric;
  /** Audit events waiting for the store (0 while it takes them). */
  auditPending: GaugeMetric;
  /** Counts what an audit event says happened (domain/audit.ts calls it for every event). */
  event(type: string, e: { provider_id?: string | null | undefined; data?: LogFields | undefined }): void;
  /** The exposition, process metrics included. */
  render(): string;
}

/** The rate limits of DESIGN §10 (ops/rate-limit.ts). */
export interface Limiter {
  /**
   * Charges one request to `key`'s `budget`; throws 429 RATE_LIMITED (with its headers) when it is spent. A promise only
   * when capacity must first be leased from the store.
   */
  take(budget: RouteLimit, key: string): void | Promise<void>;
}
