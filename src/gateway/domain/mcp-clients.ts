/**
 * MCP clients' records (DESIGN §18): a client registered here (RFC 7591), and the agent record every MCP client acts
 * as — so every consent, token, grant, approval and revocation rule of the gateway applies to it unchanged. Who a
 * client is (registered, or named by a metadata document) is oauth-server/clients.ts's to say; what is kept is here.
 */
import { PREFIX } from "../../protocol/index.ts";
import type { McpClientMetadata, McpClientRecord } from "../../store/mcp-types.ts";
import type { AgentRecord } from "../../store/types.ts";
import type { Gateway } from "../context.ts";
import { hashSecret } from "../crypto/secrets.ts";

/** How long an MCP client's agent record stays approved past its last authorization. */
const CLIENT_APPROVAL_MS = 366 * 24 * 3600 * 1000;

/** A client registered here, or null. */
export function findMcpClient(gw: Gateway, clientId: string): Promise<McpClientRecord | null> {
  return gw.store.getMcpClient(clientId);
}

/** Records a client just registered (its secret's hash, if it has one). */
export async function recordMcpClient(gw: Gateway, c: McpClientRecord): Promise<void> {
  await gw.store.createMcpClient(c);
}

/** What the agent record of a client is made from. */
export interface McpClientIdentity {
  agentClientId: string;
  agentId: string;
  metadata: McpClientMetadata;
  /** The host its redirect URIs point at (the consent page's "developer"). */
  redirectHost: string;
}

/**
 * The agent record the client acts as, approved for `providerId`'s scopes (the person still consents to each): made at
 * its first authorization, extended to further providers later. An admin who suspended it keeps it suspended.
 */
export async function agentFor(gw: Gateway, client: McpClientIdentity, providerId: string, scopes: string[]): Promise<AgentRecord> {
  const now = gw.now();
  const developer = { name: client.metadata.client_name?.slice(0, 200) || "unknown MCP client", id: client.redirectHost };
  const approval = { provider_id: providerId, approved_scopes: scopes, denied_scopes: [] };
  const existing = await gw.store.getAgentByClientId(client.agentClientId);
  if (!existing) {
    const created = await gw.store.createAgent({
      client_id: client.agentClientId,
      // MCP clients authenticate at /oauth/token (their own secret, or PKCE alone): the agent secret is never used.
      client_secret_hash: hashSecret(crypto.randomUUID() + PREFIX.clientSecret),
      agent_id: client.agentId,
      developer,
      purpose: `MCP client${client.metadata.client_uri ? ` (${client.metadata.client_uri.slice(0, 200)})` : ""}`,
      redirect_uris: null,
      status: "approved",
      approvals: [approval],
      approval_expires: now + CLIENT_APPROVAL_MS,
      created_at: now,
    });
    const made = await gw.store.getAgentByClientId(client.agentClientId);
    if (!made) throw new TypeError(created ? "agent vanished after insert" : "agent could not be created");
    return made;
  }
  const others = existing.approvals.filter((a) => a.provider_id !== providerId);
  const current = existing.approvals.find((a) => a.provider_id === providerId);
  const same = current && current.approved_scopes.length === scopes.length && scopes.every((s) => current.approved_scopes.includes(s));
  if (!same || existing.approval_expires - now < CLIENT_APPROVAL_MS / 2) {
    await gw.store.updateAgent(existing.client_id, { approvals: [...others, approval], approval_expires: now + CLIENT_APPROVAL_MS });
    return (await gw.store.getAgentByClientId(existing.client_id)) ?? existing;
  }
  return existing;
}

