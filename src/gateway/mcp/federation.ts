/**
 * The federated MCP URLs (DESIGN §22): `{base_url}/mcp` over every MCP provider (the providers file's order, then
 * providers added by the admin API by id) and `{base_url}/mcp/g/{group}` over a group of the providers file — each one
 * RFC 8707 resource — and how a federated name routes to its member: tools and prompts by prefix, resources by the
 * `ath+{provider}:` scheme (the upstream URI itself when the prefix is empty).
 */
import { DEFAULT_PREFIX, expandPrefix, resourceScheme } from "../../protocol/mcp-groups.ts";
import { MCP_PATHS } from "../../protocol/mcp-front-door.ts";
import type { ProviderRecord } from "../../store/types.ts";
import type { Gateway } from "../context.ts";
import { listMcpProviders } from "./providers.ts";

export interface Member {
  record: ProviderRecord;
  /** Expanded: `github_`, or "". */
  prefix: string;
}

export interface Federation {
  /** null for the plain `{base_url}/mcp`. */
  group: string | null;
  members: Member[];
}

/** The path of a federated URL under the base URL. */
export function federationPath(group: string | null): string {
  return group === null ? MCP_PATHS.mcp : `${MCP_PATHS.mcp}/g/${group}`;
}

/** The RFC 8707 resource of a federated URL. */
export function federationResource(gw: Gateway, group: string | null): string {
  return `${gw.opts.baseUrl}${federationPath(group)}`;
}

/** Its RFC 9728 metadata document's URL (the well-known name before the path). */
export function federationMetadataUrl(gw: Gateway, group: string | null): string {
  return `${gw.opts.baseUrl}${MCP_PATHS.protectedResource}${federationPath(group)}`;
}

/** The federation served at `group` (null: the plain /mcp), or null when no such group exists or it has no member. */
export async function findFederation(gw: Gateway, group: string | null): Promise<Federation | null> {
  const all = await listMcpProviders(gw);
  if (group === null) {
    const order = gw.opts.mcpOrder ?? [];
    const rank = (id: string) => (order.includes(id) ? order.indexOf(id) : order.length);
    const sorted = [...all].sort((a, b) => rank(a.provider_id) - rank(b.provider_id) || a.provider_id.localeCompare(b.provider_id));
    return sorted.length ? { group, members: sorted.map((record) => ({ record, prefix: expandPrefix(DEFAULT_PREFIX, record.provider_id) })) } : null;
  }
  const g = gw.opts.mcpGroups?.[group];
  if (!g) return null;
  const members = g.providers.flatMap((id) => {
    const record = all.find((p) => p.provider_id === id);
    return record ? [{ record, prefix: expandPrefix(g.prefix, id) }] : [];
  });
  return members.length ? { group, members } : null;
}

/** The federation a resource names (`{base_url}/mcp`, `{base_url}/mcp/g/{group}`, a trailing `/` tolerated), or null. */
export async function federationForResource(gw: Gateway, resource: string | null): Promise<{ federation: Federation; resource: string } | null> {
  if (resource === null) return null;
  const r = resource.replace(/\/$/, "");
  const base = `${gw.opts.baseUrl}${MCP_PATHS.mcp}`;
  if (r === base) {
    const federation = await findFederation(gw, null);
    return federation ? { federation, resource: r } : null;
  }
  const m = r.startsWith(`${base}/g/`) ? /^[a-z0-9][a-z0-9_.-]{0,63}$/.exec(r.slice(base.length + 3)) : null;
  if (!m) return null;
  const federation = await findFederation(gw, m[0]);
  return federation ? { federation, resource: r } : null;
}

/** The member a federated tool or prompt name routes to, and the upstream's own name; null when none does. */
export function routeName(f: Federation, name: string): { member: Member; name: string } | null {
  // prefixes are prefix-free (refused at configuration otherwise): the longest match is the only one
  let best: Member | null = null;
  for (const m of f.members) if (name.startsWith(m.prefix) && (best === null || m.prefix.length > best.prefix.length)) best = m;
  return best ? { member: best, name: name.slice(best.prefix.length) } : null;
}

/** A member's name as the client sees it. */
export function federatedName(m: Member, name: string): string {
  return m.prefix + name;
}

/** A member's resource URI as the client sees it. */
export function federatedUri(m: Member, uri: string): string {
  return m.prefix === "" ? uri : resourceScheme(m.record.provider_id) + uri;
}

/** The member a federated resource URI routes to, and the upstream's URI; null when none does. */
export function routeUri(f: Federation, uri: string): { member: Member; uri: string } | null {
  for (const m of f.members) {
    const scheme = resourceScheme(m.record.provider_id);
    if (m.prefix !== "" && uri.startsWith(scheme)) return { member: m, uri: uri.slice(scheme.length) };
  }
  const bare = f.members.find((m) => m.prefix === "");
  return bare ? { member: bare, uri } : null;
}
