/**
 * createGateway: the whole gateway as a function from Request to Response — no port, no timer, no process — so tests
 * run it in process (`app.fetch(new Request(…))`) with an in-memory store, an injected upstream `fetch` and a clock.
 * serve.ts puts it behind Bun.serve.
 */
import { ProviderConfig } from "../protocol/index.ts";
import { cachedStore } from "../store/cached.ts";
import type { Store } from "../store/types.ts";
import { adminTokenHash, requireAdmin, requireIntrospector } from "./admin/auth.ts";
import type { Fetch, Gateway, GatewayOptions, Logger } from "./context.ts";
import { Sealer } from "./crypto/sealing.ts";
import { hashSecret } from "./crypto/secrets.ts";
import { toRecord } from "./domain/providers.ts";
import { createPipeline } from "./http/pipeline.ts";
import { createKeyResolver } from "./identity/agent-keys.ts";
import { auditQueue } from "./ops/audit-queue.ts";
import { routeTable } from "./routes.ts";

export interface AppOptions extends Omit<GatewayOptions, "adminTokenHash" | "introspectionTokenHash" | "appId"> {
  /** Providers to upsert at start (the `--providers` file: it wins for its ids). */
  providers: Record<string, ProviderConfig>;
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
}

export interface AppDeps {
  store: Store;
  /** Outbound HTTP (providers, identity documents); default the global fetch. */
  fetch?: Fetch;
  /** Epoch milliseconds; default Date.now. */
  clock?: () => number;
  log?: Logger;
}

export interface App {
  gateway: Gateway;
  /** `peer`: the client's IP address, when the server knows it. */
  fetch(req: Request, peer?: string): Promise<Response>;
  /** Set when this start generated the admin token: show it once, it is never shown again. */
  generatedAdminToken: string | null;
  /** Writes the queued audit events, then closes the store. */
  close(): Promise<void>;
}

export async function createGateway(options: AppOptions, deps: AppDeps): Promise<App> {
  const { providers, adminToken, introspectionToken, masterKey, demo: withDemo, auditBatch, ...opts } = options;
  // Reads of tokens, providers, grants and agents come from memory, invalidated exactly (store/cached.ts).
  const store = await cachedStore(deps.store);
  const now = deps.clock ?? Date.now;
  const fetch = deps.fetch ?? ((input, init) => globalThis.fetch(input, init));
  const ids = [...Object.keys(providers), ...(withDemo ? ["demo"] : [])];
  if (opts.mode === "native" && ids.length !== 1) {
    throw new TypeError(`native mode fronts exactly one app: got ${ids.length} providers (${ids.join(", ") || "none"})`);
  }
  const admin = await adminTokenHash(store, adminToken);
  const gateway: Gateway = {
    opts: {
      ...opts,
      adminTokenHash: admin.hash,
      introspectionTokenHash: introspectionToken ? hashSecret(introspectionToken) : null,
      appId: opts.mode === "native" ? ids[0]! : null,
    },
    store,
    sealer: await Sealer.fromRawKey(masterKey),
    keys: createKeyResolver({ dev: opts.dev, fetch, now }),
    now,
    fetch,
    log: deps.log ?? SILENT,
    auditLog: auditQueue(store, deps.log ?? SILENT, auditBatch),
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
  const handle = createPipeline(gateway, routeTable({ demo: withDemo, native: opts.mode === "native" }), {
    none: () => undefined,
    admin: requireAdmin,
    introspection: requireIntrospector,
  });
  return {
    gateway,
    fetch: handle,
    generatedAdminToken: admin.generated,
    close: async () => {
      await gateway.auditLog.flush();
      await store.close();
    },
  };
}

// internal

const SILENT: Logger = { info: () => undefined, warn: () => undefined, error: () => undefined };
