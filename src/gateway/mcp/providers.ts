/** The providers fronted as MCP servers (DESIGN §18): those whose entry has `mcp.url`, each one an RFC 8707 resource. */
import { MCP_PATHS } from "../../protocol/mcp-front-door.ts";
import type { ProviderRecord } from "../../store/types.ts";
import type { Gateway } from "../context.ts";
import { findProvider, listProviders } from "../domain/providers.ts";

/**
 * The scopes an MCP client is told about — the protected-resource metadata's `scopes_supported` and a 401 challenge's
 * `scope` — : the provider's, without `offline_access` (MCP 2026-07-28 authorization: a server does not advertise it;
 * the client asks for it when the authorization server's metadata offers refresh tokens, and ath still grants them).
 */
export function advertisedScopes(record: ProviderRecord): string[] {
  return record.config.available_scopes.filter((s) => s !== "offline_access");
}

/** `{base_url}/mcp/{provider_id}`: the resource a token of an MCP client is bound to. */
export function resourceOf(gw: Gateway, providerId: string): string {
  return `${gw.opts.baseUrl}${MCP_PATHS.mcp}/${providerId}`;
}

/** `{base_url}/.well-known/oauth-protected-resource/mcp/{provider_id}` (RFC 9728 §3.1: the well-known name before the path). */
export function resourceMetadataUrl(gw: Gateway, providerId: string): string {
  return `${gw.opts.baseUrl}${MCP_PATHS.protectedResource}${MCP_PATHS.mcp}/${providerId}`;
}

/** The MCP provider with this id, or null (unknown, or not an MCP server). */
export async function findMcpProvider(gw: Gateway, providerId: string): Promise<ProviderRecord | null> {
  const record = await findProvider(gw, providerId);
  return record?.config.mcp ? record : null;
}

export async function listMcpProviders(gw: Gateway): Promise<ProviderRecord[]> {
  return (await listProviders(gw)).filter((p) => p.config.mcp);
}

/**
 * The MCP provider a `resource` names: `{base_url}/mcp/{id}` exactly (a trailing `/` tolerated, as clients derive it
 * from the URL they were given). Absent → the one MCP provider when the gateway fronts exactly one (DESIGN §18).
 */
export async function providerForResource(gw: Gateway, resource: string | null): Promise<ProviderRecord | null> {
  if (resource === null) {
    const all = await listMcpProviders(gw);
    return all.length === 1 ? all[0]! : null;
  }
  const prefix = `${gw.opts.baseUrl}${MCP_PATHS.mcp}/`;
  if (!resource.startsWith(prefix)) return null;
  const id = resource.slice(prefix.length).replace(/\/$/, "");
  if (!/^[a-z0-9][a-z0-9_.-]{0,63}$/.test(id)) return null;
  return findMcpProvider(gw, id);
}
