/**
 * An MCP client's authorization request (DESIGN §18), from /oauth/authorize until its code is exchanged: a Phase B
 * session plus what the client sent (its redirect URI, state, PKCE challenge, the resource). Once the person
 * consented, the client gets a code of its own — minted here, stored hashed, single use (oauth-server/token.ts spends
 * it).
 */
import { AthError } from "../../protocol/index.ts";
import { MCP_PREFIX } from "../../protocol/mcp-front-door.ts";
import type { McpAuthorizationRecord } from "../../store/mcp-types.ts";
import type { SessionRecord } from "../../store/types.ts";
import type { Gateway } from "../context.ts";
import { constantTimeEqual, hashSecret, mintSecret } from "../crypto/secrets.ts";
import { audit } from "./audit.ts";

/** Records the client's side of a request whose Phase B session is open. */
export async function recordMcpAuthorization(gw: Gateway, request: McpAuthorizationRecord): Promise<void> {
  await gw.store.createMcpAuthorization(request);
}

/** The client's request behind a Phase B session, or null (an ATH agent's session, or none). */
export async function mcpAuthorizationOf(gw: Gateway, sessionId: string): Promise<McpAuthorizationRecord | null> {
  if (sessionId.length > 200 || sessionId.includes("\0") || !sessionId) return null;
  return gw.store.getMcpAuthorization(sessionId);
}

/**
 * The request and its session as /oauth/return finds them: the session's `state` must be the one ath gave the consent
 * (constant time) — else SESSION_NOT_FOUND.
 */
export async function returningAuthorization(gw: Gateway, sessionId: string, state: string): Promise<{ request: McpAuthorizationRecord; session: SessionRecord }> {
  const request = await mcpAuthorizationOf(gw, sessionId);
  const session = request ? await gw.store.getSession(request.session_id) : null;
  if (!request || !session || !constantTimeEqual(state, session.agent_state)) throw new AthError("SESSION_NOT_FOUND");
  return { request, session };
}

/**
 * The client's code for a session the person consented to, once: the session's one-time code (`presented`) checked in
 * constant time, a new code minted and its hash set — on a request that has none yet (a second return gets
 * SESSION_NOT_FOUND).
 */
export async function issueMcpCode(gw: Gateway, request: McpAuthorizationRecord, session: SessionRecord, presented: string): Promise<string> {
  if (session.status !== "consented" || !session.code_hash || !constantTimeEqual(hashSecret(presented), session.code_hash)) {
    throw new AthError("SESSION_NOT_FOUND");
  }
  const code = mintSecret(MCP_PREFIX.code);
  if (!(await gw.store.setMcpAuthorizationCode(request.session_id, hashSecret(code), session.expires_at))) throw new AthError("SESSION_NOT_FOUND");
  await audit(gw, "mcp.code_issued", { client_id: request.agent_client_id, provider_id: session.provider_id, user_id: session.user_id });
  return code;
}
