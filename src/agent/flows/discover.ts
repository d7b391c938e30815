/**
 * What a gateway (or a native service) offers: its discovery document, and the providers on offer as one list —
 * the gateway's catalog, or a native service's one app. `ath discover` prints the first, `ath_providers` the second.
 */
import type { DiscoveryDocument, ServiceDiscoveryDocument } from "../../protocol/schemas.ts";
import { didYouMean } from "../../text/suggest.ts";
import { discoverGateway, discoverService } from "../client.ts";
import { notConfigured, oneLine, type ClientError } from "../errors.ts";
import type { Agent, Target } from "./agent.ts";

export type Discovered = { native: false; doc: DiscoveryDocument } | { native: true; doc: ServiceDiscoveryDocument };

/** GET /.well-known/ath.json of a gateway, or /.well-known/ath-app.json of a native service. */
export async function discover(target: Target, agent: Agent): Promise<Discovered> {
  return target.native
    ? { native: true, doc: await discoverService(target.base, agent.http) }
    : { native: false, doc: await discoverGateway(target.base, agent.http) };
}

export interface Offered {
  provider_id: string;
  display_name: string;
  available_scopes: string[];
}

/** The providers on offer: the gateway's catalog, or a native service's one app. */
export async function catalog(target: Target, agent: Agent): Promise<Offered[]> {
  const d = await discover(target, agent);
  if (d.native) return [{ provider_id: d.doc.app_id, display_name: d.doc.name, available_scopes: d.doc.auth.scopes_supported }];
  return d.doc.supported_providers.map((p) => ({ provider_id: p.provider_id, display_name: p.display_name, available_scopes: p.available_scopes }));
}

/**
 * A provider the gateway does not offer (exit 3 UNKNOWN_PROVIDER): no `ath authorize` or `--scopes` can help, so the
 * answer names the providers there are, and the closest to the one asked for.
 */
export function unknownProvider(base: string, provider: string, ids: string[]): ClientError {
  const reason = `${base} offers no provider "${oneLine(provider)}"${didYouMean(provider, ids)}: its providers are ${ids.join(", ") || "none"}`;
  return notConfigured("UNKNOWN_PROVIDER", reason, { gateway: base, provider_id: provider, providers: ids }, `see \`ath discover -g ${base}\``);
}
