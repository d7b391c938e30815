/**
 * POST /ath/token — Phase B step 4: the agent trades the one-time code for an ATH token bound to
 * (agent_id, user_id, provider_id, scopes), with a refresh token; or (DESIGN §17) a refresh token for the next pair.
 * Form-encoded (RFC 6749 §4.1.3) or JSON.
 */
import { AthError, PATHS, TokenRequest, type RefreshTokenRequest, type TokenExchangeRequest } from "../../protocol/index.ts";
import { approvalFor, attest, authenticateClient, requireApproved } from "../domain/agents.ts";
import { audit } from "../domain/audit.ts";
import type { Call } from "../context.ts";
import { dropGrant } from "../domain/grants.ts";
import { readJson } from "../http/request.ts";
import { json } from "../http/response.ts";
import { intersectScopes } from "../rules/scopes.ts";
import { constantTimeEqual, hashSecret } from "../crypto/secrets.ts";
import { mintTokens, newFamily, rotateRefreshToken, tokenResponse } from "../domain/refresh.ts";
import { parseScopeString } from "../rules/scopes.ts";
import type { AgentRecord } from "../../store/types.ts";
import { proofDeps, requireProofWhereNeeded } from "../domain/tokens.ts";
import { DpopProofError, registeredThumbprint, verifyDpopProof } from "../identity/dpop.ts";
import { dpopHeader } from "../http/request.ts";

export async function token(call: Call): Promise<Response> {
  const { gw } = call;
  const body = await readJson(call, TokenRequest, { form: true });
  const agent = await authenticateClient(gw, body.client_id, body.client_secret);
  await call.identify({ client_id: agent.client_id });
  requireApproved(gw, agent);
  await attest(gw, body.agent_attestation, agent, gw.opts.baseUrl + PATHS.token);
  const jkt = await proofAtTokenEndpoint(call, agent);
  if (body.grant_type === "refresh_token") return refresh(call, agent, body, jkt);
  return exchangeCode(call, agent, body, jkt);
}

// internal

/**
 * The DPoP proof sent with a token request (DESIGN §17): none → null; a valid one by the agent's registered key → its
 * thumbprint, to which the new tokens are bound; a bad one → 400 `invalid_dpop_proof`; another key's → 400
 * `dpop_key_mismatch`. Nothing is issued after either.
 */
async function proofAtTokenEndpoint(call: Call, agent: AgentRecord): Promise<string | null> {
  const { gw, req } = call;
  let jkt: string;
  try {
    const proof = dpopHeader(req);
    if (proof === null) return null;
    jkt = await verifyDpopProof(proof, { method: "POST", url: gw.opts.baseUrl + PATHS.token, replayScope: `client:${agent.client_id}` }, proofDeps(gw));
  } catch (err) {
    if (err instanceof DpopProofError) throw new AthError("INVALID_REQUEST", `Invalid DPoP proof: ${err.message}`, { reason: "invalid_dpop_proof" });
    throw err;
  }
  if (jkt !== (await registeredThumbprint(gw.keys, agent.agent_id))) {
    throw new AthError("INVALID_REQUEST", "The DPoP proof must be signed by the agent's registered key", { reason: "dpop_key_mismatch" });
  }
  return jkt;
}

async function refresh(call: Call, agent: AgentRecord, body: RefreshTokenRequest, jkt: string | null): Promise<Response> {
  const scopes = body.scope === undefined ? undefined : Array.isArray(body.scope) ? body.scope : parseScopeString(body.scope);
  if (scopes !== undefined && scopes.length === 0) throw new AthError("INVALID_REQUEST", "scope must name at least one scope", { field: "scope" });
  const res = await rotateRefreshToken(call.gw, { agent, presented: body.refresh_token, scopes, jkt });
  await call.identify({ provider_id: res.provider_id });
  return json(res);
}

async function exchangeCode(call: Call, agent: AgentRecord, body: TokenExchangeRequest, jkt: string | null): Promise<Response> {
  const { gw } = call;

  const session = await gw.store.getSession(body.ath_session_id);
  if (!session || session.client_id !== agent.client_id || session.status === "used") throw new AthError("SESSION_NOT_FOUND");
  if (session.status === "denied") throw new AthError("USER_DENIED");
  requireProofWhereNeeded(gw, jkt, (await gw.store.getProvider(session.provider_id))?.config);
  if (session.expires_at <= gw.now()) throw new AthError("SESSION_EXPIRED");
  if (session.status === "pending" || !session.code_hash) {
    throw new AthError("INVALID_GRANT", "The user has not approved this request yet", { reason: "authorization_pending" });
  }
  // A wrong code does not consume the session (DESIGN §8).
  if (!constantTimeEqual(hashSecret(body.code), session.code_hash)) throw new AthError("INVALID_GRANT");

  // One transaction decides (DESIGN §14): the agent row locked and still approved, the session consumed, the token
  // inserted — a suspension commits wholly before (no token) or after (and revokes it); a failing store leaves the
  // session consented, to be exchanged again.
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
  const res = tokenResponse(gw, decided.minted, {
    effective_scopes: effective,
    provider_id: consumed.provider_id,
    agent_id: agent.agent_id,
    scope_intersection: intersection,
  });
  return json(res);
}
