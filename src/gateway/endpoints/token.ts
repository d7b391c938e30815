/**
 * POST /ath/token — Phase B step 4: the agent trades the one-time code for an ATH token bound to
 * (agent_id, user_id, provider_id, scopes), with a refresh token; or (DESIGN §17) a refresh token for the next pair;
 * or (§23) an enterprise IdP's ID-JAG (jwt-bearer) for a token of the person it names, or its own token for a
 * sub-agent's (token exchange). Form-encoded (RFC 6749 §4.1.3) or JSON. The client authenticates the same way for each.
 */
import {
  AthError,
  GRANT_TYPES,
  PATHS,
  TokenRequest,
  type DelegationRequest,
  type JwtBearerRequest,
  type RefreshTokenRequest,
  type TokenExchangeRequest,
} from "../../protocol/index.ts";
import { attest, authenticateClient, requireApproved } from "../domain/agents.ts";
import { exchangeAgentCode } from "../domain/code-exchange.ts";
import type { Call } from "../context.ts";
import { readJson } from "../http/request.ts";
import { json } from "../http/response.ts";
import { rotateRefreshToken } from "../domain/refresh.ts";
import { parseScopeString } from "../rules/scopes.ts";
import type { AgentRecord } from "../../store/types.ts";
import { proofDeps } from "../domain/tokens.ts";
import { DpopProofError, verifyDpopProof } from "../identity/dpop.ts";
import { agentThumbprint } from "../domain/workload.ts";
import { proxyResource, requireResource, tokenForPerson, verifyIdJag } from "../domain/id-jag.ts";
import { delegate } from "../domain/delegation.ts";
import { findProvider } from "../domain/providers.ts";
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
  if (body.grant_type === GRANT_TYPES.jwtBearer) return idJag(call, agent, body, jkt);
  if (body.grant_type === GRANT_TYPES.tokenExchange) return delegation(call, agent, body, jkt);
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
  if (jkt !== (await agentThumbprint(gw, agent))) {
    throw new AthError("INVALID_REQUEST", "The DPoP proof must be signed by the agent's registered key", { reason: "dpop_key_mismatch" });
  }
  return jkt;
}

async function refresh(call: Call, agent: AgentRecord, body: RefreshTokenRequest, jkt: string | null): Promise<Response> {
  const scopes = scopeList(body.scope);
  const res = await rotateRefreshToken(call.gw, { agent, presented: body.refresh_token, scopes, jkt });
  await call.identify({ provider_id: res.provider_id });
  return json(res);
}

async function exchangeCode(call: Call, agent: AgentRecord, body: TokenExchangeRequest, jkt: string | null): Promise<Response> {
  const res = await exchangeAgentCode(call.gw, agent, { sessionId: body.ath_session_id, code: body.code, jkt }, async (providerId) => call.identify({ provider_id: providerId }));
  return json(res);
}

/** DESIGN §23: the person's token from the enterprise IdP's assertion, for the provider the request names. */
async function idJag(call: Call, agent: AgentRecord, body: JwtBearerRequest, jkt: string | null): Promise<Response> {
  const verified = await verifyIdJag(call.gw, body.assertion, agent.client_id);
  const provider = await findProvider(call.gw, body.provider_id);
  if (!provider) throw new AthError("PROVIDER_NOT_APPROVED", undefined, { provider_id: body.provider_id });
  await call.identify({ provider_id: provider.provider_id });
  requireResource(verified, proxyResource(call.gw, provider.provider_id));
  return json(await tokenForPerson(call.gw, verified, { agent, provider, scopes: scopeList(body.scope), jkt }));
}

/** DESIGN §23: a sub-agent's token, carved out of this agent's own (RFC 8693). */
async function delegation(call: Call, agent: AgentRecord, body: DelegationRequest, jkt: string | null): Promise<Response> {
  const res = await delegate(call.gw, {
    parent: agent,
    subjectToken: body.subject_token,
    actorToken: body.actor_token,
    actorClientId: body.actor_client_id,
    scopes: scopeList(body.scope),
    budget: body.budget,
    jkt,
  });
  await call.identify({ provider_id: res.provider_id });
  return json(res);
}

/** `scope` as a list (space-separated or an array); absent → undefined; empty → 400. */
function scopeList(scope: string | string[] | undefined): string[] | undefined {
  const scopes = scope === undefined ? undefined : Array.isArray(scope) ? scope : parseScopeString(scope);
  if (scopes !== undefined && scopes.length === 0) throw new AthError("INVALID_REQUEST", "scope must name at least one scope", { field: "scope" });
  return scopes;
}
