/**
 * Delegation to sub-agents (DESIGN §23, RFC 8693): an agent trades its own access token (`subject_token`) for a token
 * of a registered sub-agent (`actor_token`: the sub-agent's attestation) that never holds more than it — scopes ⊆ the
 * subject's (and ∩ what the sub-agent is approved for), an expiry no later than the subject's, a budget share carved
 * out of the subject's remaining count (one conditional UPDATE of the subject's budget row, exact across instances:
 * store/sql/delegations.ts), at most `--max-delegation-depth` exchanges from the root token. The new token records its
 * chain (`delegation`): each use checks that every ancestor is still live (`requireLiveChain`, through the cache every
 * revocation invalidates, here and on the other instances), so revoking any ancestor refuses every descendant at once;
 * the revocation path also revokes them in the store (domain/tokens.ts `afterRevocation`). No refresh token: a
 * sub-agent asks its parent again.
 */
import { AthError, PATHS, TOKEN_TYPES, type TokenResponse } from "../../protocol/index.ts";
import { IDENTITY_LIMITS } from "../../protocol/identity.ts";
import type { Delegation, DelegationLink } from "../../store/identity-types.ts";
import type { AgentRecord, TokenRecord } from "../../store/types.ts";
import type { Gateway } from "../context.ts";
import { peekClaims } from "../identity/issuer-jwt.ts";
import { approvalFor, attest, requireApproved } from "./agents.ts";
import { audit } from "./audit.ts";
import { delegationBudgetKey, openShare } from "./delegation-budget.ts";
import { actClaim, requireLiveChain } from "./delegation-chain.ts";
import { mintAccessToken } from "./mint.ts";
import { dpopRequired, findToken } from "./tokens.ts";
import { agentThumbprint } from "./workload.ts";

export interface DelegationInput {
  /** The authenticated caller: the agent whose token is the subject. */
  parent: AgentRecord;
  subjectToken: string;
  actorToken: string;
  /** The sub-agent's client_id, when the caller named it. */
  actorClientId?: string | undefined;
  /** What the sub-agent's token may do (⊆ the subject's); absent: all the subject's scopes. */
  scopes?: string[] | undefined;
  /** The calls carved out for it. */
  budget?: number | undefined;
  /** The thumbprint of the caller's valid DPoP proof, or null. */
  jkt: string | null;
}

/** `grant_type=…:token-exchange` at /ath/token: the sub-agent's token, or the AthError that refuses it. */
export async function delegate(gw: Gateway, x: DelegationInput): Promise<TokenResponse> {
  const subject = await requireSubject(gw, x);
  const depth = (subject.delegation?.chain.length ?? 0) + 1;
  const maxDepth = gw.opts.maxDelegationDepth ?? IDENTITY_LIMITS.delegationDepthDefault;
  if (depth > maxDepth) throw grantError("delegation_too_deep", `A token may be delegated at most ${maxDepth} times from its root; this one already was ${depth - 1} times`, { max_depth: maxDepth });
  const requested = x.scopes ?? subject.scopes;
  const wider = requested.filter((s) => !subject.scopes.includes(s));
  if (wider.length > 0) throw grantError("scope_widening", "A delegated token may only narrow the subject token's scopes", { scopes: wider });
  const parentShare = subject.delegation?.budget ?? null;
  if (parentShare !== null && x.budget === undefined) {
    throw new AthError("INVALID_REQUEST", "The subject token has a call budget: name the sub-agent's share with budget", { field: "budget", reason: "budget_required" });
  }
  const actor = await requireActor(gw, x);
  const approved = approvalFor(actor, subject.provider_id)?.approved_scopes;
  if (!approved) throw new AthError("PROVIDER_NOT_APPROVED", `The sub-agent is not approved for ${subject.provider_id}`, { provider_id: subject.provider_id, client_id: actor.client_id });
  const effective = [...new Set(requested)].filter((s) => approved.includes(s));
  const intersection = { agent_approved: approved, user_consented: subject.scopes, effective };
  if (effective.length === 0) throw new AthError("SCOPE_NOT_APPROVED", "None of these scopes is approved for the sub-agent", { scope_intersection: intersection });
  const jkt = await bindingFor(gw, subject, actor);

  const now = gw.now();
  const chain: DelegationLink[] = [{ token_id: subject.token_id, token_hash: subject.token_hash, agent_id: subject.agent_id, client_id: subject.client_id }, ...(subject.delegation?.chain ?? [])];
  const delegation: Delegation = { chain, budget: x.budget ?? null };
  const expiresAt = Math.min(now + gw.opts.tokenTtlSeconds * 1000, subject.expires_at);
  const minted = await gw.store.transaction(async (tx) => {
    // both agents still approved now (a suspension commits wholly before or after: locked in one order, no deadlock)
    for (const clientId of [x.parent.client_id, actor.client_id].sort()) {
      const current = await tx.lockAgent(clientId);
      if (!current) throw new AthError("INVALID_CLIENT", clientId === actor.client_id ? "The sub-agent is no longer registered" : undefined);
      requireApproved(gw, current);
    }
    const fresh = await tx.getToken(subject.token_hash);
    if (!fresh || fresh.revoked_at !== null) throw grantError("subject_token_revoked", "The subject token was revoked");
    if (x.budget !== undefined && parentShare !== null && (await tx.carveBudget(delegationBudgetKey(subject.token_id), 0, x.budget)) === null) {
      throw grantError("budget_exceeded", `The subject token has fewer than ${x.budget} calls left to share`, { budget: x.budget });
    }
    const who = { client_id: actor.client_id, agent_id: actor.agent_id, user_id: subject.user_id, provider_id: subject.provider_id, scopes: effective, grant_id: subject.grant_id };
    const m = await mintAccessToken(gw, tx, who, { expiresAt, jkt, delegation });
    await tx.recordAncestors(m.record.token_hash, chain.map((l) => l.token_id), expiresAt, now);
    if (x.budget !== undefined) await openShare(tx, m.record, x.budget, subject.token_id);
    return m;
  });
  const act = actClaim(delegation);
  await audit(gw, "token.delegated", {
    client_id: actor.client_id,
    agent_id: actor.agent_id,
    provider_id: subject.provider_id,
    user_id: subject.user_id,
    data: { token_id: minted.record.token_id, scopes: effective, budget: delegation.budget, depth, act },
  });
  return {
    access_token: minted.accessToken,
    token_type: jkt ? "DPoP" : "Bearer",
    expires_in: Math.round((expiresAt - gw.now()) / 1000),
    effective_scopes: effective,
    provider_id: subject.provider_id,
    agent_id: actor.agent_id,
    scope_intersection: intersection,
    issued_token_type: TOKEN_TYPES.accessToken,
    act,
    budget: delegation.budget,
  };
}

// internal

/** The subject token: this client's own, live, its chain live, and its DPoP binding proven by this request. */
async function requireSubject(gw: Gateway, x: DelegationInput): Promise<TokenRecord> {
  const subject = await findToken(gw, x.subjectToken);
  if (!subject || subject.client_id !== x.parent.client_id) throw grantError("subject_token_invalid", "The subject token is not an access token of this client");
  if (subject.revoked_at !== null) throw grantError("subject_token_revoked", "The subject token was revoked");
  if (subject.expires_at <= gw.now()) throw grantError("subject_token_expired", "The subject token expired");
  try {
    await requireLiveChain(gw, subject);
  } catch {
    throw grantError("subject_token_revoked", "A token the subject token was delegated from was revoked");
  }
  if (subject.jkt && x.jkt !== subject.jkt) {
    throw new AthError("INVALID_REQUEST", "The subject token is DPoP-bound: send a DPoP proof signed by the key it is bound to", { reason: "dpop_required" });
  }
  return subject;
}

/** The sub-agent the actor token attests: registered, approved, not the caller itself, its attestation valid. */
async function requireActor(gw: Gateway, x: DelegationInput): Promise<AgentRecord> {
  const sub = peekClaims(x.actorToken)?.sub;
  const actor = typeof sub === "string" && sub.length <= 2048 ? await gw.store.getAgentByAgentId(sub) : null;
  if (!actor) throw grantError("assertion_invalid", "The actor_token's sub is not a registered agent");
  if (x.actorClientId !== undefined && x.actorClientId !== actor.client_id) throw grantError("assertion_invalid", "The actor_token attests another agent than actor_client_id");
  if (actor.client_id === x.parent.client_id) throw new AthError("INVALID_REQUEST", "An agent cannot delegate to itself", { field: "actor_token" });
  try {
    await attest(gw, x.actorToken, actor, gw.opts.baseUrl + PATHS.token);
  } catch (err) {
    if (!(err instanceof AthError) || (err.code !== "INVALID_ATTESTATION" && err.code !== "AGENT_IDENTITY_MISMATCH")) throw err;
    // verifyAttestation's two messages that are not "invalid" (identity/attestation.ts)
    const reason = err.message === "attestation jti replayed" ? "assertion_replayed" : err.message === "attestation expired" ? "assertion_expired" : "assertion_invalid";
    throw grantError(reason, `actor_token: ${err.message}`);
  }
  requireApproved(gw, actor);
  return actor;
}

/**
 * The key the sub-agent's token binds to: its own registered key, whenever the subject token is bound (a delegated
 * token is never weaker) or DPoP is required for the provider — the actor token proved the sub-agent holds it.
 */
async function bindingFor(gw: Gateway, subject: TokenRecord, actor: AgentRecord): Promise<string | null> {
  if (!subject.jkt && !dpopRequired(gw, (await gw.store.getProvider(subject.provider_id))?.config)) return null;
  const jkt = await agentThumbprint(gw, actor);
  if (jkt === null) throw new AthError("INVALID_REQUEST", "The token must be DPoP-bound but the sub-agent proved no key", { reason: "dpop_required" });
  return jkt;
}

function grantError(reason: string, message: string, extra: Record<string, unknown> = {}): AthError {
  return new AthError("INVALID_GRANT", message, { reason, ...extra });
}
