/**
 * One MCP URL for many servers (DESIGN §22), what is kept: one front-door token (its resource the federated URL) and,
 * per member, the person's own upstream grant for the client — the one signed in at, or one `{prefix}connect` added.
 * A member's call is judged and sent as at `/mcp/{id}`: with the token as that member sees it (its provider, the
 * person's grant for it, the scopes the client is approved for and the person granted there).
 */
import type { AgentRecord, GrantRecord, ProviderRecord, TokenRecord } from "../../store/types.ts";
import type { Gateway } from "../context.ts";
import { approvalFor } from "./agents.ts";
import { audit } from "./audit.ts";
import { openConnection } from "./connections.ts";

/** The token as `provider` sees it at the federated URL, or null when the person has not connected it (no live grant). */
export async function memberToken(gw: Gateway, agent: AgentRecord, token: TokenRecord, provider: ProviderRecord): Promise<TokenRecord | null> {
  const id = provider.provider_id;
  if (token.provider_id === id && token.grant_id) return token;
  const grant: GrantRecord | null = await gw.store.findLiveGrant(agent.agent_id, token.user_id, id);
  if (!grant) return null;
  const approved = approvalFor(agent, id)?.approved_scopes ?? [];
  const scopes = grant.scope.length ? approved.filter((s) => grant.scope.includes(s)) : approved;
  if (scopes.length === 0) return null;
  return { ...token, provider_id: id, grant_id: grant.grant_id, scopes };
}

/**
 * `{prefix}connect`: the URL where the person connects `provider` for this client — the provider's Phase B, its grant
 * stored as this person's (a connection, domain/connections.ts). The client is approved for the provider's scopes first,
 * as its first authorization there would (domain/mcp-clients.ts); the person still consents at the upstream.
 */
export async function connectMember(gw: Gateway, agent: AgentRecord, token: TokenRecord, provider: ProviderRecord): Promise<string> {
  const id = provider.provider_id;
  const scopes = provider.config.available_scopes;
  if (!approvalFor(agent, id)) {
    const others = agent.approvals.filter((a) => a.provider_id !== id);
    await gw.store.updateAgent(agent.client_id, { approvals: [...others, { provider_id: id, approved_scopes: scopes, denied_scopes: [] }] });
  }
  const fresh = (await gw.store.getAgentByClientId(agent.client_id)) ?? agent;
  const url = await openConnection(gw, { agent: fresh, provider, person: token.user_id, scopes });
  await audit(gw, "mcp.connect_requested", { client_id: agent.client_id, agent_id: agent.agent_id, provider_id: id, user_id: token.user_id });
  return url;
}

/** Who holds a live token family for each federated URL (`resources`), and which of `providers` each of them connected. */
export async function federatedPeople(
  gw: Gateway,
  resources: readonly string[],
  providers: (resource: string) => readonly string[],
): Promise<{ resource: string; client_id: string; user_id: string; connected: string[]; missing: string[] }[]> {
  const holders = await gw.store.listResourceHolders(resources, gw.now());
  return Promise.all(
    holders.map(async (h) => {
      const ids = providers(h.resource);
      const live = await Promise.all(ids.map(async (id) => ((await gw.store.findLiveGrant(h.agent_id, h.user_id, id)) ? id : null)));
      const connected = live.filter((id): id is string => id !== null);
      return { resource: h.resource, client_id: h.client_id, user_id: h.user_id, connected, missing: ids.filter((id) => !connected.includes(id)) };
    }),
  );
}
