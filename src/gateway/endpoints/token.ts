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

  const consumed = await gw.store.consumeSession(session.session_id, agent.client_id, gw.now());
  if (!consumed) throw new AthError("SESSION_NOT_FOUND");
  await call.identify({ provider_id: consumed.provider_id });

  const approved = approvalFor(agent, consumed.provider_id)?.approved_scopes ?? [];
  const consented = consumed.consented_scopes ?? [];
  const effective = intersectScopes(approved, consented, consumed.requested_scopes);
  const intersection = { agent_approved: approved, user_consented: consented, effective };
  if (effective.length === 0) {
    if (consumed.grant_id) await dropGrant(gw, consumed.grant_id);
    await audit(gw, "token.refused", { client_id: agent.client_id, agent_id: agent.agent_id, provider_id: consumed.provider_id, data: intersection });
    throw new AthError("SCOPE_NOT_APPROVED", "No scope is both approved for the agent and consented to by the user", {
      scope_intersection: intersection,
    });
  }

  const accessToken = mintSecret(PREFIX.token);
  const now = gw.now();
  await gw.store.createToken({
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
