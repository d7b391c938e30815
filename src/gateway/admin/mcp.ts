/**
 * The admin API: one MCP URL for many servers (DESIGN §22) — GET /ath/admin/mcp: `/mcp` and each group of the providers
 * file, its members in order with their prefixes, and each person holding a token for it with the members they
 * connected (and those still to connect).
 */
import type { Call, Gateway } from "../context.ts";
import { federatedPeople } from "../domain/mcp-federation.ts";
import { json } from "../http/response.ts";
import { federationResource, findFederation, type Federation } from "../mcp/federation.ts";

export async function federation({ gw }: Call): Promise<Response> {
  return json(await federationView(gw));
}

/** The federated URLs as the admin API and the console show them. */
export async function federationView(gw: Gateway) {
  const all: Federation[] = [];
  for (const group of [null, ...Object.keys(gw.opts.mcpGroups ?? {})]) {
    const f = await findFederation(gw, group);
    if (f) all.push(f);
  }
  const byResource = new Map(all.map((f) => [federationResource(gw, f.group), f]));
  const people = await federatedPeople(gw, [...byResource.keys()], (r) => byResource.get(r)!.members.map((m) => m.record.provider_id));
  return {
    urls: all.map((f) => {
      const url = federationResource(gw, f.group);
      return {
        group: f.group,
        url,
        members: f.members.map((m) => ({ provider_id: m.record.provider_id, display_name: m.record.config.display_name, prefix: m.prefix })),
        people: people.filter((p) => p.resource === url).map(({ resource: _r, ...p }) => p),
      };
    }),
  };
}
