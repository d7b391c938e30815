/**
 * createGateway: the whole gateway as a function from Request to Response — no port, no timer, no process — so tests
 * run it in process (`app.fetch(new Request(…))`) with an in-memory store, an injected upstream `fetch` and a clock.
 * serve.ts puts it behind Bun.serve.
 */
import { ProviderConfig, type TrustedIssuer } from "../protocol/index.ts";
import { cachedStore } from "../store/cached.ts";
import type { Store } from "../store/types.ts";
import { requireAdmin, requireIntrospector, requireMetricsReader } from "./admin/auth.ts";
import { adminTokenHash } from "./domain/admin-token.ts";
import type { Fetch, Gateway, GatewayOptions, Logger, Metrics } from "./context.ts";
import { MasterKeySealer } from "./crypto/sealing.ts";
import { hashSecret } from "./crypto/secrets.ts";
import { openAuditChain } from "./domain/audit-chain.ts";
import type { AuditPin } from "./domain/audit-guard.ts";
import { enqueueWebhookEvents, isWebhookSource } from "./domain/webhooks.ts";
import { startWebhookDeliverer } from "./ops/webhooks.ts";
import { toRecord } from "./domain/providers.ts";
import { putIssuer } from "./domain/trusted-issuers.ts";
import { createPipeline, type Peer, type Settled } from "./http/pipeline.ts";
import { createPrefixRouter } from "./http/router.ts";
import { createKeyResolver } from "./identity/agent-keys.ts";
import { memoryAuditPin } from "./ops/audit-pin.ts";
import { auditQueue } from "./ops/audit-queue.ts";
import { SILENT } from "./ops/log.ts";
import { createTracer } from "./ops/tracing.ts";
import { createMetrics } from "./ops/metrics.ts";
import { createLimiter, type RateLimits } from "./ops/rate-limit.ts";
import { cancellable, createUpstreamClient } from "./proxy/http1.ts";
import { fastPrefixes, routeTable } from "./routes.ts";

export interface AppOptions
  extends Omit<GatewayOptions, "adminTokenHash" | "introspectionTokenHash" | "appId" | "metricsTokenHash" | "trustProxy" | "metricsPublic" | "maxProxyBody">,
    Partial<Pick<GatewayOptions, "trustProxy" | "metricsPublic" | "maxProxyBody">> {
  /** Providers to upsert at start (the `--providers` file: it wins for its ids). */
  providers: Record<string, ProviderConfig>;
  /** Trusted issuers to upsert at start (the file's `trusted_issuers`, DESIGN §23: it wins for its issuers). */
  trustedIssuers?: TrustedIssuer[];
  /** The operator's admin token; when absent one is generated at first start (only its hash is kept). */
  adminToken?: string;
  /** A token that may call POST /ath/introspect (the admin token may too). */
  introspectionToken?: string;
  /** 32 raw bytes: the key that seals secrets at rest. */
  masterKey: Uint8Array<ArrayBuffer>;
  /** Mount the sandbox provider under /demo. */
  demo: boolean;
  /** How audit events are batched (ops/audit-queue.ts); defaults suit production. */
  auditBatch?: { maxBatch?: number; delayMs?: number };
  /** A token that may read GET /metrics (the admin token may too). */
  metricsToken?: string;
  /** Rate limits per budget (DESIGN §10); a budget left out is not limited. */
  rateLimits?: RateLimits;
  /** The largest protocol request body, in bytes (default LIMITS.maxBodyBytes). */
  maxBody?: number;
  /** OTLP/HTTP base URL (`--otlp-endpoint`, OTEL_EXPORTER_OTLP_ENDPOINT): spans go to `<it>/v1/traces`. */
  otlpEndpoint?: string;
  /** Where the audit chain's verified head is kept (ops/audit-pin.ts; `ath serve`: a file in the data dir); default: memory. */
  auditPin?: AuditPin;
}

export interface AppDeps {
  store: Store;
  /** Outbound HTTP (providers, identity documents); default the global fetch. */
  fetch?: Fetch;
  /** Epoch milliseconds; default Date.now. */
  clock?: () => number;
  log?: Logger;
  /** Where metrics are kept (default: a new registry). */
  metrics?: Metrics;
}

export interface App {
  gateway: Gateway;
  /**
   * `peer`: the client's IP address as the listener saw it (per-IP limits: registration, the console's sign-in), or a
   * function that reads it when asked (serve.ts: reading it costs).
   */
  fetch(req: Request, peer?: Peer, settled?: Settled): Promise<Response>;
  /**
   * The same, for requests whose path starts with one of routes.ts's `fastPrefixes` (Bun.serve's native `routes` hand
   * them over): matched against the rows under that prefix only — the same answer as `fetch`, for less work per call.
   */
  under: Record<string, (req: Request, peer?: Peer, settled?: Settled) => Promise<Response>>;
  /** Set when this start generated the admin token: show it once, it is never shown again. */
  generatedAdminToken: string | null;
  /** Writes the queued audit events, then closes the store. */
  close(): Promise<void>;
}

/** How long SIGTERM waits for a store that does not take the last audit batches (then they are logged as lost). */
const AUDIT_CLOSE_TIMEOUT_MS = 10_000;

export async function createGateway(options: AppOptions, deps: AppDeps): Promise<App> {
  const { providers, trustedIssuers, adminToken, introspectionToken, metricsToken, rateLimits, maxBody, masterKey, demo: withDemo, auditBatch, otlpEndpoint, auditPin, ...opts } = options;
  const log = deps.log ?? SILENT;
  const tracer = createTracer({ ...(otlpEndpoint ? { endpoint: otlpEndpoint } : {}), version: opts.version, log, ...(deps.fetch ? { fetch: deps.fetch } : {}) });
  // Reads of tokens, providers, grants and agents come from memory, invalidated exactly (store/cached.ts).
  const cached = await cachedStore(deps.store);
  const store = tracer.wrapStore(cached);
  const now = deps.clock ?? Date.now;
  const fetch = tracer.wrapFetch(deps.fetch ?? ((input, init) => globalThis.fetch(input, init)));
  // The relay's own HTTP/1.1 client (issue 41), unless a fetch is injected: then every call goes through it.
  const upstream = deps.fetch ? null : createUpstreamClient((input, init) => globalThis.fetch(input, init));
  const ids = [...Object.keys(providers), ...(withDemo ? ["demo"] : [])];
  if (opts.mode === "native" && ids.length !== 1) {
    throw new TypeError(`native mode fronts exactly one app: got ${ids.length} providers (${ids.join(", ") || "none"})`);
  }
  const admin = await adminTokenHash(store, adminToken);
  const metrics = deps.metrics ?? createMetrics(opts.version);
  const sealer = await MasterKeySealer.fromRawKey(masterKey);
  const auditChain = await openAuditChain({
    store, sealer, now, log,
    pin: auditPin ?? memoryAuditPin(),
    // A rewrite is recorded in the chain it was found in (the console and `ath admin audit` show it) and counted.
    onTamper: (t) => {
      const event = { type: "audit.tamper_detected", at: now(), data: { seq: t.seq, reason: t.reason } };
      metrics.event(event.type, event);
      store.appendAudit(event).catch((err) => log.error("the audit.tamper_detected record could not be written", err));
    },
  });
  const gateway: Gateway = {
    opts: {
      ...opts,
      trustProxy: opts.trustProxy ?? false,
      metricsPublic: opts.metricsPublic ?? false,
      maxProxyBody: opts.maxProxyBody ?? DEFAULT_MAX_PROXY_BODY,
      mcpOrder: opts.mcpOrder ?? ids,
      adminTokenHash: admin.hash,
      introspectionTokenHash: introspectionToken ? hashSecret(introspectionToken) : null,
      metricsTokenHash: metricsToken ? hashSecret(metricsToken) : null,
      appId: opts.mode === "native" ? ids[0]! : null,
    },
    store,
    cache: cached.cacheStats,
    sealer,
    keys: createKeyResolver({ dev: opts.dev, fetch, now }),
    now,
    fetch,
    upstreamFetch: upstream === null ? cancellable(fetch) : tracer.wrapFetch(upstream.fetch),
    log,
    auditLog: auditQueue(store, log, {
      ...auditBatch,
      // A batch with events webhooks carry fills the outbox in the same transaction: both or neither.
      write: (batch, batchId) =>
        batch.some(isWebhookSource)
          ? store.transaction(async (tx) => {
              if (await tx.appendAuditBatch(batchId, batch)) await enqueueWebhookEvents(tx, batch);
            })
          : store.appendAuditBatch(batchId, batch),
      onRetry: () => metrics.auditRetries.inc([]),
      onPending: (n) => metrics.auditPending.set(n),
      onWritten: (batch) => {
        auditChain.written(batch.length);
        if (batch.some(isWebhookSource)) gateway.webhooks?.nudge();
      },
    }),
    auditChain,
    tracer,
    metrics,
    limiter: createLimiter(rateLimits ?? {}, { store, now, metrics, log }),
  };
  const all = { ...providers };
  if (withDemo) {
    const { createDemo } = await import("./demo/index.ts");
    const demo = createDemo({ baseUrl: opts.baseUrl });
    gateway.demo = demo;
    all[demo.providerId] = ProviderConfig.parse(demo.config);
  }
  for (const [id, config] of Object.entries(all)) {
    await store.upsertProvider(await toRecord(gateway, id, config, "file"));
  }
  for (const issuer of trustedIssuers ?? []) await putIssuer(gateway, issuer, "file");
  gateway.webhooks = startWebhookDeliverer(gateway);
  const native = opts.mode === "native";
  const table = routeTable({ demo: withDemo, native, ...(maxBody ? { maxBody } : {}) });
  const guards = { none: () => undefined, admin: requireAdmin, introspection: requireIntrospector, metrics: requireMetricsReader };
  const handle = createPipeline(gateway, table, guards);
  const under: App["under"] = {};
  for (const prefix of fastPrefixes({ native })) {
    under[prefix] = tracer.entry(createPipeline(gateway, table, guards, createPrefixRouter(table, prefix)));
  }
  return {
    gateway,
    fetch: tracer.entry(handle),
    under,
    generatedAdminToken: admin.generated,
    close: async () => {
      auditChain.stop();
      await gateway.auditLog.close(AUDIT_CLOSE_TIMEOUT_MS);
      await gateway.webhooks?.stop();
      await tracer.close();
      await store.close();
      upstream?.close();
    },
  };
}

// internal

/** DESIGN §10: proxied request bodies up to 32 MiB unless --max-proxy-body says otherwise. */
const DEFAULT_MAX_PROXY_BODY = 32 * 1024 * 1024;
