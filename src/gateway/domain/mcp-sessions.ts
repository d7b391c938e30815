/**
 * What an MCP client declared when it opened an upstream session (MCP 2025-11-25's stateful wire): whether it takes
 * URL-mode elicitation, so an approval-held call can be answered as one. Kept in the store (any instance may serve the
 * session's next request), keyed by a hash of the provider and the upstream's session id.
 */
import type { TokenRecord } from "../../store/types.ts";
import type { Gateway } from "../context.ts";
import { hashSecret } from "../crypto/secrets.ts";

/** Whether an initialize request's capabilities declare URL-mode elicitation (`elicitation: {url: {}}`). */
export function declaresUrlElicitation(params: unknown): boolean {
  const caps = (params as { capabilities?: { elicitation?: { url?: unknown } } } | null)?.capabilities;
  return caps?.elicitation?.url !== undefined && caps.elicitation.url !== null && typeof caps.elicitation.url === "object";
}

/** Records the session the upstream just opened for this client. */
export async function rememberSession(gw: Gateway, token: TokenRecord, sessionId: string, urlElicitation: boolean): Promise<void> {
  await gw.store.recordMcpSession({ session_key: sessionKey(token.provider_id, sessionId), client_id: token.client_id, url_elicitation: urlElicitation, created_at: gw.now() });
}

/** Whether the session the request names was opened by this client declaring URL-mode elicitation. */
export async function urlElicitationDeclared(gw: Gateway, req: Request, token: TokenRecord): Promise<boolean> {
  const sid = req.headers.get("mcp-session-id");
  if (!sid || sid.length > 256) return false;
  const s = await gw.store.getMcpSession(sessionKey(token.provider_id, sid));
  return s !== null && s.client_id === token.client_id && s.url_elicitation;
}

// internal

function sessionKey(providerId: string, sessionId: string): string {
  return hashSecret(`${providerId}:${sessionId}`);
}
