/**
 * Enterprise-managed authorization (DESIGN §23): an Identity Assertion JWT Authorization Grant from a trusted `kind:
 * idp` issuer, presented at /ath/token by an ATH agent or at /oauth/token by an MCP client (RFC 7523 §2.1). The IdP
 * decided: no consent page — but the person's upstream grant must exist. `verifyIdJag` checks the assertion (issuer,
 * `typ`, signature, claims: identity/id-jag.ts) and spends its `jti` once; `tokenForPerson` then finds the grant of
 * (client, person, provider), the person being `{issuer}#{sub}`, and mints an access token for the assertion's scopes
 * ∩ what the client is approved for (∩ what the person granted upstream). No grant yet: a connection session opens
 * and the refusal (403 CONSENT_REQUIRED, OAuth's `interaction_required`) carries its `consent_url` — the person signs
 * in at the upstream once (ath's own page is skipped: domain/connections.ts), then the client presents a new ID-JAG.
 * No refresh token: the IdP decides again each time (domain/mint.ts).
 */
import { AthError, ID_JAG_TYP, PATHS, type TokenResponse } from "../../protocol/index.ts";
import type { AgentRecord, ProviderRecord } from "../../store/types.ts";
import type { Gateway } from "../context.ts";
import { checkIdJagClaims, type IdJagClaims } from "../identity/id-jag.ts";
import { AssertionError } from "../identity/issuer-jwt.ts";
import { approvalFor, requireApproved } from "./agents.ts";
import { audit } from "./audit.ts";
import { openConnection } from "./connections.ts";
import { mintAccessToken } from "./mint.ts";
import { requireProofWhereNeeded } from "./tokens.ts";
import { verifyFromIssuer } from "./trusted-issuers.ts";

/** A verified ID-JAG: its claims, and the person it names. */
export interface VerifiedIdJag extends IdJagClaims {
  /** `{issuer}#{sub}`: the user_id of the grant and the tokens. */
  person: string;
}

/**
 * The assertion verified for the client `clientId` and spent — else AthError INVALID_GRANT with `details.reason`
 * assertion_invalid | assertion_expired | assertion_replayed | issuer_untrusted (DESIGN §23 "Pinned").
 */
export async function verifyIdJag(gw: Gateway, assertion: string, clientId: string): Promise<VerifiedIdJag> {
  try {
    const { issuer, claims } = await verifyFromIssuer(gw, assertion, "idp", ID_JAG_TYP);
    const c = checkIdJagClaims(claims, { audience: issuer.audience ?? gw.opts.baseUrl, clientId, now: gw.now() });
    if (!(await gw.store.recordJti(`id-jag:${c.iss}`, c.jti, c.exp * 1000, gw.now()))) throw new AssertionError("assertion_replayed", "this assertion was already used (jti)");
    return { ...c, person: `${c.iss}#${c.sub}` };
  } catch (err) {
    if (err instanceof AssertionError) throw new AthError("INVALID_GRANT", err.message, { reason: err.reason });
    throw err;
  }
}

/** The assertion's `resource` must be the one the door serves (RFC 8707) — else INVALID_REQUEST `resource_mismatch`. */
export function requireResource(v: VerifiedIdJag, expected: string): void {
  if (v.resource.replace(/\/$/, "") !== expected) {
    throw new AthError("INVALID_REQUEST", `The assertion's resource must be ${expected}`, { reason: "resource_mismatch", field: "resource" });
  }
}

export interface PersonGrant {
  /** The agent record the token is issued to (an MCP client's own record for an MCP client). */
  agent: AgentRecord;
  provider: ProviderRecord;
  /** The request's `scope`, narrowing the assertion's. */
  scopes?: string[] | undefined;
  /** A valid DPoP proof's thumbprint (ATH agents only), or null. */
  jkt: string | null;
  /** For the audit record: the MCP client's OAuth client_id. */
  mcpClient?: string;
}

/** The access token for the verified assertion, or 403 CONSENT_REQUIRED (with `consent_url`) / SCOPE_NOT_APPROVED. */
export async function tokenForPerson(gw: Gateway, v: VerifiedIdJag, p: PersonGrant): Promise<TokenResponse> {
  const { agent, provider } = p;
  const providerId = provider.provider_id;
  if (!p.mcpClient) requireProofWhereNeeded(gw, p.jkt, provider.config);
  const approved = approvalFor(agent, providerId)?.approved_scopes;
  if (!approved) throw new AthError("PROVIDER_NOT_APPROVED", undefined, { provider_id: providerId });
  // the IdP's scopes (none named: no limit of its own) ∩ the client's approval ∩ the request's narrowing
  const effective = (v.scopes ?? approved).filter((s) => approved.includes(s) && (p.scopes === undefined || p.scopes.includes(s)));
  const decided = { agent_approved: approved, user_consented: v.scopes ?? approved, effective };
  if (effective.length === 0) throw new AthError("SCOPE_NOT_APPROVED", "None of the assertion's scopes is approved for this client", { scope_intersection: decided });
  const ids = { client_id: agent.client_id, agent_id: agent.agent_id, provider_id: providerId, user_id: v.person };
  const grant = await gw.store.findLiveGrant(agent.agent_id, v.person, providerId);
  const covered = grant ? effective.filter((s) => grant.scope.includes(s)) : [];
  if (!grant || covered.length === 0) {
    const consentUrl = await openConnection(gw, { agent, provider, person: v.person, scopes: effective });
    await audit(gw, "token.consent_required", { ...ids, data: { grant: "id-jag", issuer: v.iss, scopes: effective, ...(p.mcpClient ? { mcp_client: p.mcpClient } : {}) } });
    throw new AthError("CONSENT_REQUIRED", `The person has not connected ${provider.config.display_name} for this client yet: open consent_url once, then present a new assertion`, {
      consent_url: consentUrl,
      provider_id: providerId,
    });
  }
  const minted = await gw.store.transaction(async (tx) => {
    const current = await tx.lockAgent(agent.client_id);
    if (!current) throw new AthError("INVALID_CLIENT");
    requireApproved(gw, current);
    const who = { ...ids, scopes: covered, grant_id: grant.grant_id };
    return mintAccessToken(gw, tx, who, { expiresAt: gw.now() + gw.opts.tokenTtlSeconds * 1000, jkt: p.mcpClient ? null : p.jkt });
  });
  await audit(gw, "token.issued", { ...ids, data: { scopes: covered, grant: "id-jag", issuer: v.iss, ...(p.mcpClient ? { mcp_client: p.mcpClient } : {}) } });
  return {
    access_token: minted.accessToken,
    token_type: minted.record.jkt ? "DPoP" : "Bearer",
    expires_in: gw.opts.tokenTtlSeconds,
    effective_scopes: covered,
    provider_id: providerId,
    agent_id: agent.agent_id,
    scope_intersection: { ...decided, effective: covered },
  };
}

/** `{base_url}/ath/proxy/{provider_id}`: the resource of an ATH agent's ID-JAG (DESIGN §23 "Pinned"). */
export function proxyResource(gw: Gateway, providerId: string): string {
  return `${gw.opts.baseUrl}${PATHS.proxy}/${providerId}`;
}
