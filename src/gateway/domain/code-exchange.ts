/**
 * Phase B step 4 (DESIGN §3, §8, §14): the agent's one-time code traded for an ATH token bound to (agent, user,
 * provider, scopes) and a refresh family. Checks in the spec's order — the session is this client's and not used,
 * not denied (USER_DENIED), DPoP where required, not expired, consented, the code right (constant time; a wrong code
 * does not consume the session) — then one transaction decides: the agent row locked and still approved, the session
 * consumed, the tokens inserted. A suspension commits wholly before (no token) or after (and revokes it); a failing
 * store leaves the session consented, to be exchanged again. Effective scopes = approved ∩ consented ∩ requested; an
 * empty intersection consumes the session and issues nothing (403 SCOPE_NOT_APPROVED).
 */
import { AthError, type TokenResponse } from "../../protocol/index.ts";
import type { AgentRecord } from "../../store/types.ts";
import type { Gateway } from "../context.ts";
import { constantTimeEqual, hashSecret } from "../crypto/secrets.ts";
import { intersectScopes } from "../rules/scopes.ts";
import { approvalFor, requireApproved } from "./agents.ts";
import { audit } from "./audit.ts";
import { dropGrant } from "./grants.ts";
import { mintTokens, newFamily, tokenResponse } from "./refresh.ts";
import { requireProofWhereNeeded } from "./tokens.ts";

export interface CodeExchange {
  sessionId: string;
  code: string;
  /** The thumbprint of a valid DPoP proof sent with the request (already checked against the agent's key), or null. */
  jkt: string | null;
}

/** The token response for the code, or the AthError that refuses it; `onProvider` learns the session's provider. */
export async function exchangeAgentCode(gw: Gateway, agent: AgentRecord, x: CodeExchange, onProvider: (providerId: string) => Promise<void>): Promise<TokenResponse> {
  const { jkt } = x;
  const session = await gw.store.getSession(x.sessionId);
  if (!session || session.client_id !== agent.client_id || session.status === "used") throw new AthError("SESSION_NOT_FOUND");
  if (session.status === "denied") throw new AthError("USER_DENIED");
  requireProofWhereNeeded(gw, jkt, (await gw.store.getProvider(session.provider_id))?.config);
  if (session.expires_at <= gw.now()) throw new AthError("SESSION_EXPIRED");
  if (session.status === "pending" || !session.code_hash) {
    throw new AthError("INVALID_GRANT", "The user has not approved this request yet", { reason: "authorization_pending" });
  }
  if (!constantTimeEqual(hashSecret(x.code), session.code_hash)) throw new AthError("INVALID_GRANT");
  const decided = await gw.store.transaction(async (tx) => {
    const current = await tx.lockAgent(agent.client_id);
    if (!current) throw new AthError("INVALID_CLIENT");
    requireApproved(gw, current);
    const consumed = await tx.consumeSession(session.session_id, agent.client_id, gw.now());
    if (!consumed) throw new AthError("SESSION_NOT_FOUND");
    const approved = approvalFor(current, consumed.provider_id)?.approved_scopes ?? [];
    const consented = consumed.consented_scopes ?? [];
    const effective = intersectScopes(approved, consented, consumed.requested_scopes);
    const intersection = { agent_approved: approved, user_consented: consented, effective };
    // An empty intersection still consumes the session: the consent cannot give anything.
    if (effective.length === 0) return { issued: false as const, consumed, intersection };
    const who = {
      client_id: agent.client_id,
      agent_id: agent.agent_id,
      user_id: consumed.user_id ?? "unknown",
      provider_id: consumed.provider_id,
      scopes: effective,
      grant_id: consumed.grant_id,
    };
    const minted = await mintTokens(gw, tx, who, newFamily(gw, jkt), jkt);
    return { issued: true as const, consumed, intersection, effective, minted };
  });
  const { consumed, intersection } = decided;
  await onProvider(consumed.provider_id);
  if (!decided.issued) {
    if (consumed.grant_id) await dropGrant(gw, consumed.grant_id);
    await audit(gw, "token.refused", { client_id: agent.client_id, agent_id: agent.agent_id, provider_id: consumed.provider_id, data: intersection });
    throw new AthError("SCOPE_NOT_APPROVED", "No scope is both approved for the agent and consented to by the user", {
      scope_intersection: intersection,
    });
  }
  const effective = decided.effective;
  await audit(gw, "token.issued", {
    client_id: agent.client_id,
    agent_id: agent.agent_id,
    provider_id: consumed.provider_id,
    user_id: consumed.user_id,
    data: { scopes: effective },
  });
  return tokenResponse(gw, decided.minted, {
    effective_scopes: effective,
    provider_id: consumed.provider_id,
    agent_id: agent.agent_id,
    scope_intersection: intersection,
  });
}
