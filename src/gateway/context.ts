/** What every gateway handler gets: options, the store, the sealer, the agent key resolver, a clock, a logger. */
import type { Store } from "../store/types.ts";
import type { KeyResolver } from "./identity/agent-keys.ts";
import type { Sealer } from "./crypto/sealing.ts";
import type { ApprovalMode } from "./rules/policy.ts";

export interface GatewayOptions {
  /** Public base URL, no trailing slash: `http://127.0.0.1:8787`. */
  baseUrl: string;
  version: string;
  /** Allows http:// and loopback agent identity documents. */
  dev: boolean;
  approval: ApprovalMode;
  sessionTtlSeconds: number;
  tokenTtlSeconds: number;
  /** Reject proxy requests to providers that declare no scope_rules. */
  strictScopes: boolean;
  /** How long the proxy waits for upstream response headers. */
  upstreamTimeoutMs: number;
  /** SHA-256 of the admin token. */
  adminTokenHash: string;
}

export interface Logger {
  info(msg: string, data?: Record<string, unknown>): void;
  warn(msg: string, data?: Record<string, unknown>): void;
  error(msg: string, err?: unknown): void;
}

export interface Gateway {
  opts: GatewayOptions;
  store: Store;
  sealer: Sealer;
  keys: KeyResolver;
  now: () => number;
  log: Logger;
  /** Routes `/demo/…` when `ath serve --demo` is on. */
  demo?: { fetch(req: Request): Promise<Response> };
}

/** `${base}/ath/token`, the audience of token-endpoint attestations. */
export function endpointUrl(gw: Gateway, path: string): string {
  return gw.opts.baseUrl + path;
}
