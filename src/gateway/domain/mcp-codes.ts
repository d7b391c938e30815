/**
 * An MCP client's authorization code, exchanged (DESIGN §18): the code spent by its first presentation (RFC 6749
 * §4.1.2), then checked — its client, redirect URI, PKCE verifier (RFC 7636) and resource (RFC 8707) — and, in one
 * transaction with the client's agent row locked and still approved, its Phase B session consumed and a new token
 * family minted (domain/refresh.ts: the agents' families, bound to the client and the resource). The client's first
 * completed authorization is recorded: the sweeper keeps it from then on.
 */
import { AthError, type TokenResponse } from "../../protocol/index.ts";
import type { Gateway } from "../context.ts";
import { constantTimeEqual, hashSecret } from "../crypto/secrets.ts";
import { s256 } from "../oauth/pkce.ts";
import { intersectScopes } from "../rules/scopes.ts";
import { approvalFor, requireApproved } from "./agents.ts";
import { audit } from "./audit.ts";
import { dropGrant } from "./grants.ts";
import { mintTokens, newFamily, tokenResponse } from "./refresh.ts";

export interface McpCodeExchange {
  /** The OAuth client_id, as authenticated at /oauth/token. */
  clientId: string;
  code: string;
  /** The PKCE code_verifier (its syntax already checked). */
  verifier: string;
  /** What the token request named, if it named them. */
  redirectUri: string | null;
  resource: string | null;
}

/** `grant_type=authorization_code` at /oauth/token: the token response, or an AthError the door shapes for OAuth. */
export async function exchangeMcpCode(gw: Gateway, x: McpCodeExchange): Promise<TokenResponse> {
  const request = await gw.store.consumeMcpCode(hashSecret(x.code), gw.now());
  if (!request) throw new AthError("INVALID_GRANT", "the code is unknown, used or expired");
  if (request.client_id !== x.clientId) throw new AthError("INVALID_GRANT", "the code was issued to another client");
  if (x.redirectUri !== null && x.redirectUri !== request.redirect_uri) throw new AthError("INVALID_GRANT", "redirect_uri differs from the authorization request's");
  if (!constantTimeEqual(s256(x.verifier), request.code_challenge)) throw new AthError("INVALID_GRANT", "code_verifier does not match the code_challenge");
  if (x.resource !== null && x.resource.replace(/\/$/, "") !== request.resource) {
    throw new AthError("INVALID_REQUEST", "resource differs from the authorization request's", { reason: "resource_mismatch" });
  }

  const decided = await gw.store.transaction(async (tx) => {
    const agent = await tx.lockAgent(request.agent_client_id);
    if (!agent) throw new AthError("INVALID_GRANT", "the client is gone");
    requireApproved(gw, agent);
    const session = await tx.consumeSession(request.session_id, request.agent_client_id, gw.now());
    if (!session) throw new AthError("INVALID_GRANT", "the authorization was already used or expired");
    const approved = approvalFor(agent, session.provider_id)?.approved_scopes ?? [];
    const consented = session.consented_scopes ?? [];
    const intersection = { agent_approved: approved, user_consented: consented, effective: intersectScopes(approved, consented, session.requested_scopes) };
    // An empty intersection still consumes the session (committed): the consent cannot give anything.
    if (intersection.effective.length === 0) return { issued: false as const, agent, session, intersection };
    await tx.markMcpClientAuthorized(request.client_id, gw.now());
    const who = {
      client_id: agent.client_id,
      agent_id: agent.agent_id,
      user_id: session.user_id ?? "unknown",
      provider_id: session.provider_id,
      scopes: intersection.effective,
      grant_id: session.grant_id,
    };
    const minted = await mintTokens(gw, tx, who, newFamily(gw, null, { oauth_client_id: request.client_id, resource: request.resource }), null);
    return { issued: true as const, agent, session, intersection, minted };
  });
  const { agent, session, intersection } = decided;
  const ids = { client_id: agent.client_id, agent_id: agent.agent_id, provider_id: session.provider_id };
  if (!decided.issued) {
    if (session.grant_id) await dropGrant(gw, session.grant_id);
    await audit(gw, "token.refused", { ...ids, data: { ...intersection, mcp_client: request.client_id } });
    throw new AthError("SCOPE_NOT_APPROVED", "the person granted none of the scopes asked for", { scope_intersection: intersection });
  }
  await audit(gw, "token.issued", { ...ids, user_id: session.user_id, data: { scopes: intersection.effective, mcp_client: request.client_id } });
  return tokenResponse(gw, decided.minted, {
    effective_scopes: intersection.effective,
    provider_id: session.provider_id,
    agent_id: agent.agent_id,
    scope_intersection: intersection,
  });
}
