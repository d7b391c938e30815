/** Provider records: sealing the client secret on the way in, opening it only where the gateway talks to the provider. */
import { AthError, type ProviderConfig } from "../../protocol/index.ts";
import type { ProviderRecord } from "../../store/types.ts";
import type { Gateway } from "../context.ts";

/** A provider with its client secret in the clear — held only for the duration of one upstream call. */
export interface OpenProvider {
  provider_id: string;
  config: ProviderConfig;
}

export async function toRecord(gw: Gateway, providerId: string, config: ProviderConfig, source: ProviderRecord["source"]): Promise<ProviderRecord> {
  return {
    provider_id: providerId,
    config: { ...config, client_secret: "" },
    client_secret_sealed: await gw.sealer.seal(config.client_secret, aad(providerId)),
    source,
    updated_at: gw.now(),
  };
}

export async function openProvider(gw: Gateway, record: ProviderRecord): Promise<OpenProvider> {
  const secret = await gw.sealer.open(record.client_secret_sealed, aad(record.provider_id));
  return { provider_id: record.provider_id, config: { ...record.config, client_secret: secret } };
}

export async function requireProvider(gw: Gateway, providerId: string): Promise<ProviderRecord> {
  const p = await gw.store.getProvider(providerId);
  if (!p) throw new AthError("NOT_FOUND", `Provider '${providerId}' is not configured`, { provider_id: providerId });
  return p;
}

/** The admin API's view: the secret is never returned. */
export function maskedProvider(record: ProviderRecord): Record<string, unknown> {
  return { provider_id: record.provider_id, ...record.config, client_secret: "********", source: record.source };
}

export async function providerMap(gw: Gateway): Promise<Map<string, ProviderConfig>> {
  return new Map((await gw.store.listProviders()).map((p) => [p.provider_id, p.config]));
}

// internal

function aad(providerId: string): string {
  return `provider:${providerId}:client_secret`;
}
