/** Assembles a running gateway: store, master key, providers, key resolver, Bun.serve, the sweeper, shutdown. */
import { join } from "node:path";
import { ProviderConfig } from "../protocol/index.ts";
import { openStore } from "../store/index.ts";
import type { Gateway, GatewayOptions, Logger } from "./context.ts";
import { createKeyResolver } from "./identity/agent-keys.ts";
import { toRecord } from "./domain/providers.ts";
import { loadOrCreateMasterKey, Sealer } from "./crypto/sealing.ts";
import { handle } from "./server.ts";
import { errorResponse } from "./http.ts";
import { hashSecret, mintSecret } from "./crypto/secrets.ts";
import type { Store } from "../store/types.ts";

export interface StartOptions extends Omit<GatewayOptions, "adminTokenHash" | "baseUrl"> {
  host: string;
  port: number;
  baseUrl?: string;
  dataDir: string;
  /** `sqlite:PATH` or `postgres://…`; default `sqlite:<dataDir>/ath.db`. */
  db?: string;
  providers: Record<string, ProviderConfig>;
  /** The operator's admin token; when absent one is generated at first start (its hash kept in the store). */
  adminToken?: string;
  masterKey?: string;
  tls?: { cert: string; key: string };
  demo: boolean;
  log: Logger;
  /** How often expired rows are swept. */
  sweepIntervalMs?: number;
  /** How long revoked/expired tokens and dead grants are kept before the sweeper deletes them (default 24 h). */
  sweepRetentionMs?: number;
  /** How long audit events are kept (default 90 days): an unauthenticated caller can add events, so they cannot grow forever. */
  auditRetentionMs?: number;
}

export interface RunningGateway {
  gateway: Gateway;
  url: string;
  /** Set on the first start without --admin-token: print it once, it is never shown again. */
  generatedAdminToken: string | null;
  /** Stop accepting, finish in-flight requests, close the store. */
  stop(): Promise<void>;
}

/** Rows past their life are kept this long before the sweeper deletes them (audit and debugging). */
const RETAIN_MS = 24 * 3600 * 1000;
const AUDIT_RETAIN_MS = 90 * 24 * 3600 * 1000;

export async function startGateway(o: StartOptions): Promise<RunningGateway> {
  const store = await openStore(o.db ?? `sqlite:${join(o.dataDir, "ath.db")}`);
  const sealer = await Sealer.fromRawKey(loadOrCreateMasterKey(o.dataDir, o.masterKey));
  const admin = await adminTokenHash(store, o.adminToken);
  const scheme = o.tls ? "https" : "http";
  const server = Bun.serve({
    hostname: o.host,
    port: o.port,
    // Bun's idle timeout (max 255 s) must outlast slow upstreams and streamed bodies.
    idleTimeout: 255,
    ...(o.tls ? { tls: { cert: Bun.file(o.tls.cert), key: Bun.file(o.tls.key) } } : {}),
    fetch: (req) => handle(gateway, req),
    // Only reached if the router's own boundary failed; same exposure rule.
    error: (err) => errorResponse(err, (msg, e) => o.log.error(msg, e)),
  });
  const baseUrl = (o.baseUrl ?? `${scheme}://${o.host.includes(":") ? `[${o.host}]` : o.host}:${server.port}`).replace(/\/+$/, "");
  const gateway: Gateway = {
    opts: { ...o, baseUrl, adminTokenHash: admin.hash },
    store,
    sealer,
    keys: createKeyResolver({ dev: o.dev }),
    now: () => Date.now(),
    log: o.log,
  };
  if (o.demo) {
    const { createDemo } = await import("./demo/index.ts");
    const demo = createDemo({ baseUrl });
    gateway.demo = demo;
    o.providers = { ...o.providers, [demo.providerId]: ProviderConfig.parse(demo.config) };
  }
  for (const [id, config] of Object.entries(o.providers)) {
    await store.upsertProvider(await toRecord(gateway, id, config, "file"));
  }
  const sweeper = setInterval(() => {
    store.sweep(Date.now(), o.sweepRetentionMs ?? RETAIN_MS, o.auditRetentionMs ?? AUDIT_RETAIN_MS).catch((err) => o.log.error("sweep failed", err));
  }, o.sweepIntervalMs ?? 60_000);
  sweeper.unref();

  return {
    gateway,
    url: baseUrl,
    generatedAdminToken: admin.generated,
    async stop() {
      clearInterval(sweeper);
      await server.stop(false);
      await store.close();
    },
  };
}

// internal

const ADMIN_HASH_KEY = "admin_token_hash";

async function adminTokenHash(store: Store, given: string | undefined): Promise<{ hash: string; generated: string | null }> {
  if (given) return { hash: hashSecret(given), generated: null };
  const stored = await store.getMeta(ADMIN_HASH_KEY);
  if (stored) return { hash: stored, generated: null };
  const token = mintSecret("ath_admin_");
  await store.setMeta(ADMIN_HASH_KEY, hashSecret(token));
  return { hash: hashSecret(token), generated: token };
}
