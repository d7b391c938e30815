/**
 * Provider records: the one read path for a provider (every handler and the refresh loop go through `findProvider` /
 * `requireProvider`), sealing the client secret on the way in, opening it only where the gateway talks to the provider.
 */
import type { AdminProvider } from "../../protocol/admin.ts";
import { AthError, type ProviderConfig } from "../../protocol/index.ts";
import type { ProviderRecord } from "../../store/types.ts";
import type { Gateway } from "../context.ts";
import type { OAuthProvider, Outbound } from "../oauth/client.ts";

export async function toRecord(gw: Gateway, providerId: string, config: ProviderConfig, source: ProviderRecord["source"]): Promise<ProviderRecord> {
  return {
    provider_id: providerId,
    config: { ...config, client_secret: "" },
    client_secret_sealed: await gw.sealer.seal(config.client_secret, aad(providerId)),
    source,
    updated_at: gw.now(),
  };
}

/** The provider's record, or null when it is not (or no longer) configured. */
export function findProvider(gw: Gateway, providerId: string): Promise<ProviderRecord | null> {
  return gw.store.getProvider(providerId);
}

export function listProviders(gw: Gateway): Promise<ProviderRecord[]> {
  return gw.store.listProviders();
}

/**
 * A provider that a session, token or grant refers to. One answer when it was removed since: 502
 * UPSTREAM_UNAVAILABLE naming it (the agent cannot fix this; the operator can).
 */
export async function requireProvider(gw: Gateway, providerId: string): Promise<ProviderRecord> {
  const record = await findProvider(gw, providerId);
  if (!record) {
    throw new AthError("UPSTREAM_UNAVAILABLE", `Provider '${providerId}' is no longer configured on this gateway`, {
      provider_id: providerId,
      reason: "provider_removed",
    });
  }
  return record;
}

/** The provider with its client secret in the clear — for the duration of one call to the provider. */
export async function openProvider(gw: Gateway, record: ProviderRecord): Promise<OAuthProvider> {
  const secret = await gw.sealer.open(record.client_secret_sealed, aad(record.provider_id));
  return { provider_id: record.provider_id, config: { ...record.config, client_secret: secret } };
}

/** How the gateway calls providers: its fetch and the upstream timeout. */
export function outbound(gw: Gateway): Outbound {
  return { fetch: gw.fetch, timeoutMs: gw.opts.upstreamTimeoutMs };
}

/** The admin API's view: the secret is never returned. */
/** What the admin API shows for a client secret. */
export const MASKED_SECRET = "********";

export function maskedProvider(record: ProviderRecord): AdminProvider {
  return { provider_id: record.provider_id, ...record.config, client_secret: MASKED_SECRET, source: record.source };
}

export async function providerMap(gw: Gateway): Promise<Map<string, ProviderConfig>> {
  return new Map((await listProviders(gw)).map((p) => [p.provider_id, p.config]));
}

// internal

function aad(providerId: string): string {
  return `provider:${providerId}:client_secret`;
}
