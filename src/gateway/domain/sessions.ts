/** Consent sessions: which can still be used in the browser, denying one, and recording the person's consent. */
import { AthError, PREFIX } from "../../protocol/index.ts";
import type { SessionRecord } from "../../store/types.ts";
import type { Gateway } from "../context.ts";
import { hashSecret, mintSecret, randomSecret } from "../crypto/secrets.ts";
import { createPkce } from "../oauth/pkce.ts";
import type { UpstreamTokenResponse } from "../oauth/client.ts";
import { parseScopeString } from "../rules/scopes.ts";
import { audit } from "./audit.ts";
import { newGrant } from "./grants.ts";

/**
 * Opens a single-use consent session (DESIGN §3 Phase B step 1) for an agent — or an MCP client acting as one
 * (DESIGN §18) — with its own PKCE verifier (sealed) and consent handle; the caller has checked who asks for what.
 */
export async function openSession(
  gw: Gateway,
  o: { clientId: string; agentId: string; providerId: string; scopes: string[]; state: string; redirectUri: string | null; resource: string | null },
): Promise<SessionRecord> {
  const now = gw.now();
  const sessionId = mintSecret(PREFIX.session);
  const pkce = createPkce();
  await gw.store.createSession({
    session_id: sessionId,
    handle: randomSecret(),
    client_id: o.clientId,
    agent_id: o.agentId,
    provider_id: o.providerId,
    requested_scopes: [...new Set(o.scopes)],
    agent_state: o.state,
    user_redirect_uri: o.redirectUri,
    resource: o.resource,
    pkce_verifier_sealed: await gw.sealer.seal(pkce.verifier, `session:${sessionId}:pkce`),
    code_challenge: pkce.challenge,
    upstream_state: randomSecret(),
    status: "pending",
    binding_hash: null,
    code_hash: null,
    user_id: null,
    consented_scopes: null,
    grant_id: null,
    created_at: now,
    expires_at: now + gw.opts.sessionTtlSeconds * 1000,
  });
  const session = await gw.store.getSession(sessionId);
  if (!session) throw new TypeError("session vanished after insert");
  await audit(gw, "session.created", { client_id: o.clientId, agent_id: o.agentId, provider_id: o.providerId, data: { scopes: o.scopes } });
  return session;
}

/** The session a consent handle names, if the person can still act on it (requirePending). */
export async function pendingByHandle(gw: Gateway, handle: string): Promise<SessionRecord> {
  return requirePending(gw, await gw.store.getSessionByHandle(handle));
}

/** The session the provider's `state` names, if the person can still act on it (requirePending). */
export async function pendingByUpstreamState(gw: Gateway, state: string): Promise<SessionRecord> {
  return requirePending(gw, await gw.store.getSessionByUpstreamState(state));
}

/**
 * Binds the session to the browser that decides it (DESIGN §8: the first to answer owns it; the provider's callback
 * must come back to it); false when another browser already did.
 */
export function bindBrowser(gw: Gateway, session: SessionRecord, bindingHash: string): Promise<boolean> {
  return gw.store.bindSession(session.session_id, bindingHash);
}

/** A session the person can still act on: found, pending, unexpired — else SESSION_NOT_FOUND / SESSION_EXPIRED. */
export function requirePending(gw: Gateway, session: SessionRecord | null): SessionRecord {
  if (!session || session.status !== "pending") throw new AthError("SESSION_NOT_FOUND");
  if (session.expires_at <= gw.now()) throw new AthError("SESSION_EXPIRED");
  return session;
}

/** pending → denied (the agent will get 403 USER_DENIED at /ath/token); false when it was no longer pending. */
export async function denySession(gw: Gateway, session: SessionRecord, error: string): Promise<boolean> {
  if (!(await gw.store.markSessionDenied(session.session_id))) return false;
  await audit(gw, "consent.denied", { client_id: session.client_id, agent_id: session.agent_id, provider_id: session.provider_id, data: { error } });
  return true;
}

/**
 * The person consented at the provider: store the upstream grant (sealed) and mark the session consented, in one
 * transaction, with the scopes the provider granted (the requested ones when it does not say) and the agent's
 * one-time code, valid for one session lifetime from now (DESIGN §8). SESSION_NOT_FOUND when the session was decided
 * meanwhile.
 */
export async function recordConsent(
  gw: Gateway,
  session: SessionRecord,
  o: { tokens: UpstreamTokenResponse; userId: string },
): Promise<{ agentCode: string; expiresAt: number; consented: string[] }> {
  const grant = await newGrant(gw, {
    providerId: session.provider_id,
    userId: o.userId,
    agentId: session.agent_id,
    tokens: o.tokens,
    requestedScopes: session.requested_scopes,
  });
  const agentCode = mintSecret(PREFIX.code);
  const consented = o.tokens.scope !== undefined ? parseScopeString(o.tokens.scope) : session.requested_scopes;
  const expiresAt = gw.now() + gw.opts.sessionTtlSeconds * 1000;
  // One transaction: the grant exists exactly when the session says consented (a session decided meanwhile rolls
  // the grant back with it; a failing store leaves neither).
  await gw.store.transaction(async (tx) => {
    await tx.createGrant(grant);
    const marked = await tx.markSessionConsented(session.session_id, {
      code_hash: hashSecret(agentCode),
      user_id: o.userId,
      consented_scopes: consented,
      grant_id: grant.grant_id,
      expires_at: expiresAt,
    });
    if (!marked) throw new AthError("SESSION_NOT_FOUND");
  });
  await audit(gw, "consent.granted", {
    client_id: session.client_id,
    agent_id: session.agent_id,
    provider_id: session.provider_id,
    user_id: o.userId,
    data: { consented },
  });
  return { agentCode, expiresAt, consented };
}
