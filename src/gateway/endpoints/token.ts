/**
 * POST /ath/token — Phase B step 4: the agent trades the one-time code for an ATH token bound to
 * (agent_id, user_id, provider_id, scopes). Form-encoded (RFC 6749 §4.1.3) or JSON.
 */
import { AthError, PATHS, PREFIX, TokenExchangeRequest, type TokenResponse } from "../../protocol/index.ts";
import { approvalFor, attest, authenticateClient, requireApproved } from "../domain/agents.ts";
import { audit } from "../domain/audit.ts";
import type { Call } from "../context.ts";
import { dropGrant } from "../domain/grants.ts";
import { readJson } from "../http/request.ts";
import { json } from "../http/response.ts";
import { intersectScopes } from "../rules/scopes.ts";
import { constantTimeEqual, hashSecret, mintSecret } from "../crypto/secrets.ts";

export async function token(call: Call): Promise<Response> {
  const { gw } = call;
  const body = await readJson(call, TokenExchangeRequest, { form: true });
  const agent = await authenticateClient(gw, body.client_id, body.client_secret);
  await call.identify({ client_id: agent.client_id });
  requireApproved(gw, agent);
  await attest(gw, body.agent_attestation, agent, gw.opts.baseUrl + PATHS.token);

  const session = await gw.store.getSession(body.ath_session_id);
  if (!session || session.client_id !== agent.client_id || session.status === "used") throw new AthError("SESSION_NOT_FOUND");
  if (session.status === "denied") throw new AthError("USER_DENIED");
  if (session.expires_at <= gw.now()) throw new AthError("SESSION_EXPIRED");
  if (session.status === "pending" || !session.code_hash) {
    throw new AthError("INVALID_GRANT", "The user has not approved this request yet", { reason: "authorization_pending" });
  }
  // A wrong code does not consume the session (DESIGN §8).
  if (!constantTimeEqual(hashSecret(body.code), session.code_hash)) throw new AthError("INVALID_GRANT");

  // One transaction decides (DESIGN §14): the agent row locked and still approved, the session consumed, the token
  // inserted — a suspension commits wholly before (no token) or after (and revokes it); a failing store leaves the
  // session consented, to be exchanged again.
  const accessToken = mintSecret(PREFIX.token);
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
    const now = gw.now();
    await tx.createToken({
      token_hash: hashSecret(accessToken),
      token_id: mintSecret(PREFIX.tokenId, 16),
      client_id: agent.client_id,
      agent_id: agent.agent_id,
      user_id: consumed.user_id ?? "unknown",
      provider_id: consumed.provider_id,
      scopes: effective,
      grant_id: consumed.grant_id,
      created_at: now,
      expires_at: now + gw.opts.tokenTtlSeconds * 1000,
      revoked_at: null,
    });
    return { issued: true as const, consumed, intersection, effective };
  });
  const { consumed, intersection } = decided;
  await call.identify({ provider_id: consumed.provider_id });
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
  const res: TokenResponse = {
    access_token: accessToken,
    token_type: "Bearer",
    expires_in: gw.opts.tokenTtlSeconds,
    effective_scopes: effective,
    provider_id: consumed.provider_id,
    agent_id: agent.agent_id,
    scope_intersection: intersection,
  };
  return json(res);
}
