/**
 * GET /ath/agents/status — ath's extension (not in the spec): an agent reads its own registration as the gateway
 * holds it now (an admin may have approved, denied or suspended it since registration). Client authentication is
 * HTTP Basic with the client credentials (RFC 6749 §2.3.1); any failure is the one 401 INVALID_CLIENT.
 */
import { AthError, type AgentStatusResponse } from "../../protocol/index.ts";
import type { Call } from "../context.ts";
import { approvalLapsed, authenticateClient } from "../domain/agents.ts";
import { json } from "../http/response.ts";

export async function agentStatus(call: Call): Promise<Response> {
  const { gw, req } = call;
  const credentials = basicCredentials(req.headers.get("authorization"));
  if (!credentials) throw new AthError("INVALID_CLIENT", "Send the client credentials as HTTP Basic (client_id:client_secret)", undefined, { headers: { "www-authenticate": 'Basic realm="ath"' } });
  const agent = await authenticateClient(gw, credentials.id, credentials.secret);
  const res: AgentStatusResponse = {
    client_id: agent.client_id,
    agent_id: agent.agent_id,
    agent_status: agent.status,
    approved_providers: agent.approvals,
    approval_expires: new Date(agent.approval_expires).toISOString(),
    approval_expired: approvalLapsed(agent, gw.now()),
  };
  return json(res);
}

/** `Basic base64(id:secret)` (RFC 7617; the id and secret form-urlencoded first, RFC 6749 §2.3.1), or null. */
export function basicCredentials(header: string | null): { id: string; secret: string } | null {
  if (header === null || header.slice(0, 6).toLowerCase() !== "basic ") return null;
  let decoded: string;
  try {
    decoded = atob(header.slice(6).trim());
  } catch {
    return null;
  }
  const colon = decoded.indexOf(":");
  if (colon <= 0) return null;
  try {
    return { id: decodeURIComponent(decoded.slice(0, colon).replace(/\+/g, " ")), secret: decodeURIComponent(decoded.slice(colon + 1).replace(/\+/g, " ")) };
  } catch {
    return null;
  }
}
