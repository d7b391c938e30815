/**
 * Token families (DESIGN §17), of ATH agents and MCP clients alike (§18: an MCP client is a kind of client, not a
 * second table with its own rotation): what a code exchange hands out — an access token and a refresh token, both
 * minted here — and the one rotation behind `grant_type=refresh_token` at /ath/token and at /oauth/token. A family is
 * every access and refresh token descended from one consent; it dies whole (reuse of a spent refresh token, revocation
 * of any member, the client's suspension, denial or deletion, an admin's revocation, a dead upstream grant,
 * `--refresh-ttl`, `--refresh-idle`).
 *
 * Each rotation is one transaction: the client's agent row locked and still approved, the upstream grant checked, the
 * presented token spent by one guarded UPDATE (two racing presentations — on one instance or two — spend it once), its
 * successor and the new access token inserted. A spent token presented again by its client within
 * LIMITS.refreshRaceWindowMs of its rotation is the loser of such a race (`refresh_token_spent`, nothing revoked);
 * later, it is reuse: the family is revoked and the event audited `refresh.reuse_detected`. The domain speaks
 * AthError; each door shapes it for its wire (ATH's at /ath/token, OAuth's at /oauth/token).
 */
import { AthError, LIMITS, PREFIX, type TokenResponse } from "../../protocol/index.ts";
import type { AgentRecord, RefreshTokenRecord, Store, TokenRecord } from "../../store/types.ts";
import type { Gateway } from "../context.ts";
import { hashSecret, mintSecret } from "../crypto/secrets.ts";
import { approvalFor, requireApproved } from "./agents.ts";
import { audit } from "./audit.ts";
import { dropGrant } from "./grants.ts";
import { afterRevocation, requireProofWhereNeeded } from "./tokens.ts";

/** Who the new tokens are for and what they allow: the token record's own fields. */
export type Grantee = Pick<TokenRecord, "client_id" | "agent_id" | "user_id" | "provider_id" | "scopes" | "grant_id">;

/** An MCP client's side of a family (DESIGN §18): the OAuth client_id it presents and the resource its tokens open. */
export interface McpBinding {
  oauth_client_id: string;
  resource: string;
}

/** The family a mint belongs to: a new one (at the code exchange) or the one being rotated. */
export interface Family {
  family_id: string;
  family_expires_at: number;
  /** The refresh token's binding: refreshes need a proof by this key. */
  jkt: string | null;
  /** Set for an MCP client's family; null for an ATH agent's. */
  mcp: McpBinding | null;
}

export interface Minted {
  accessToken: string;
  refreshToken: string;
  expiresAt: number;
  refreshExpiresAt: number;
  /** The access token's binding (DPoP), or null for a bearer token. */
  jkt: string | null;
}

/** A new family for a consent just exchanged, bound to `jkt` when the exchange carried a valid proof. */
export function newFamily(gw: Gateway, jkt: string | null, mcp: McpBinding | null = null): Family {
  return { family_id: mintSecret("fam_", 16), family_expires_at: gw.now() + refreshTtl(gw) * 1000, jkt, mcp };
}

/** Inserts an access token and its refresh token in `family` (inside the caller's transaction). */
export async function mintTokens(gw: Gateway, tx: Store, who: Grantee, family: Family, accessJkt: string | null): Promise<Minted> {
  const now = gw.now();
  const accessToken = mintSecret(PREFIX.token);
  const refreshToken = mintSecret(PREFIX.refreshToken);
  const expiresAt = now + gw.opts.tokenTtlSeconds * 1000;
  const refreshExpiresAt = Math.min(family.family_expires_at, now + refreshIdle(gw) * 1000);
  const token: TokenRecord = {
    token_hash: hashSecret(accessToken),
    token_id: mintSecret(PREFIX.tokenId, 16),
    ...who,
    created_at: now,
    expires_at: expiresAt,
    revoked_at: null,
    family_id: family.family_id,
    jkt: accessJkt,
    // the resource an MCP client's token opens, checked by the door without reading the family (DESIGN §22)
    ...(family.mcp ? { resource: family.mcp.resource } : {}),
  };
  await tx.createToken(token);
  await tx.createRefreshToken({
    refresh_hash: hashSecret(refreshToken),
    family_id: family.family_id,
    client_id: who.client_id,
    oauth_client_id: family.mcp?.oauth_client_id ?? null,
    resource: family.mcp?.resource ?? null,
    agent_id: who.agent_id,
    user_id: who.user_id,
    provider_id: who.provider_id,
    scopes: who.scopes,
    grant_id: who.grant_id,
    jkt: family.jkt,
    family_expires_at: family.family_expires_at,
    expires_at: refreshExpiresAt,
    created_at: now,
    spent_at: null,
    revoked_at: null,
  });
  return { accessToken, refreshToken, expiresAt, refreshExpiresAt, jkt: accessJkt };
}

/** The token response for what was minted (the fields both grants share). */
export function tokenResponse(gw: Gateway, m: Minted, rest: Pick<TokenResponse, "effective_scopes" | "provider_id" | "agent_id" | "scope_intersection">): TokenResponse {
  const now = gw.now();
  return {
    access_token: m.accessToken,
    token_type: m.jkt ? "DPoP" : "Bearer",
    expires_in: Math.round((m.expiresAt - now) / 1000),
    refresh_token: m.refreshToken,
    refresh_expires_in: Math.max(0, Math.floor((m.refreshExpiresAt - now) / 1000)),
    ...rest,
  };
}

export interface RefreshRequest {
  /** The client presenting it: the agent record it is (an ATH agent) or acts as (an MCP client). */
  agent: Pick<AgentRecord, "client_id">;
  /** At /oauth/token: the MCP client's OAuth client_id, and the RFC 8707 resource it named (null: none). */
  mcp?: { oauth_client_id: string; resource: string | null };
  presented: string;
  /** The narrower scope asked for, if any. */
  scopes: string[] | undefined;
  /** The thumbprint of a valid DPoP proof sent with the request (already checked against the agent's key), or null. */
  jkt: string | null;
}

/** `grant_type=refresh_token`: rotates the presented refresh token, or refuses (and, on reuse, kills the family). */
export async function rotateRefreshToken(gw: Gateway, r: RefreshRequest): Promise<TokenResponse> {
  const hash = hashSecret(r.presented);
  type Outcome =
    | { kind: "minted"; minted: Minted; rt: RefreshTokenRecord; scopes: string[]; approved: string[] }
    | { kind: "killed"; rt: RefreshTokenRecord; revoked: TokenRecord[]; why: "reused" | "upstream_grant_revoked" };
  const outcome = await gw.store.transaction(async (tx): Promise<Outcome> => {
    const current = await tx.lockAgent(r.agent.client_id);
    if (!current) throw new AthError("INVALID_CLIENT");
    requireApproved(gw, current);
    const rt = r.presented.startsWith(PREFIX.refreshToken) ? await tx.getRefreshToken(hash) : null;
    // Another client's refresh token — another agent's, an MCP client's at /ath/token, an agent's at /oauth/token — is
    // not this client's to spend, nor to kill: unknown to it (DESIGN §18).
    if (!rt || rt.client_id !== current.client_id || rt.oauth_client_id !== (r.mcp?.oauth_client_id ?? null)) {
      throw new AthError("INVALID_GRANT", "Unknown refresh token");
    }
    if (rt.revoked_at !== null) throw refused("revoked", "This refresh token's family was revoked: run `ath authorize` again");
    if (rt.spent_at !== null) {
      if (gw.now() - rt.spent_at <= LIMITS.refreshRaceWindowMs) throw raceLost();
      return { kind: "killed", rt, revoked: await tx.revokeRefreshFamily(rt.family_id, gw.now()), why: "reused" };
    }
    if (rt.expires_at <= gw.now()) {
      const why = rt.family_expires_at <= gw.now() ? "its family reached --refresh-ttl" : "it was not used within --refresh-idle";
      throw refused("expired", `This refresh token expired (${why}): run \`ath authorize\` again`);
    }
    if (r.mcp?.resource != null && r.mcp.resource.replace(/\/$/, "") !== rt.resource) {
      throw new AthError("INVALID_REQUEST", "The resource differs from the one this refresh token's family was issued for", { reason: "resource_mismatch" });
    }
    // DPoP is the agents' (DESIGN §17): an MCP client's tokens are bearer tokens at its MCP door (§18).
    if (!r.mcp) requireProofWhereNeeded(gw, r.jkt, (await tx.getProvider(rt.provider_id))?.config);
    if (rt.jkt !== null && r.jkt === null) {
      throw new AthError("INVALID_REQUEST", "This refresh token is DPoP-bound: send a DPoP proof signed by the agent's key", { reason: "dpop_required" });
    }
    const requested = r.scopes ?? rt.scopes;
    const wider = requested.filter((s) => !rt.scopes.includes(s));
    if (wider.length > 0) {
      throw new AthError("INVALID_REQUEST", "A refresh may narrow the token's scopes, never widen them", { reason: "scope_widening", scopes: wider });
    }
    // The one kill rule for a lost upstream grant: the family names a grant that is gone or dead.
    if (rt.grant_id !== null) {
      const grant = await tx.getGrant(rt.grant_id);
      if (!grant || grant.status === "dead") {
        return { kind: "killed", rt, revoked: await tx.revokeRefreshFamily(rt.family_id, gw.now()), why: "upstream_grant_revoked" };
      }
    }
    // Cut to what the client is approved for now (an admin may have taken a scope away since the consent).
    const approved = approvalFor(current, rt.provider_id)?.approved_scopes ?? [];
    const scopes = [...new Set(requested)].filter((s) => approved.includes(s));
    if (scopes.length === 0) {
      throw new AthError("SCOPE_NOT_APPROVED", "None of this family's scopes is approved for the agent any more", { scopes: requested, approved });
    }
    // The one use: a presentation that lost the race to this UPDATE (another transaction spent it first) gets null.
    const spent = await tx.spendRefreshToken(hash, gw.now());
    if (!spent) throw raceLost();
    const who: Grantee = { client_id: rt.client_id, agent_id: rt.agent_id, user_id: rt.user_id, provider_id: rt.provider_id, scopes, grant_id: rt.grant_id };
    const mcp = rt.oauth_client_id !== null && rt.resource !== null ? { oauth_client_id: rt.oauth_client_id, resource: rt.resource } : null;
    const family: Family = { family_id: rt.family_id, family_expires_at: rt.family_expires_at, jkt: rt.jkt ?? r.jkt, mcp };
    return { kind: "minted", minted: await mintTokens(gw, tx, who, family, r.jkt), rt, scopes, approved };
  });
  const { rt } = outcome;
  const ids = { client_id: rt.client_id, agent_id: rt.agent_id, provider_id: rt.provider_id, user_id: rt.user_id };
  const mcpClient = rt.oauth_client_id === null ? {} : { mcp_client: rt.oauth_client_id };
  if (outcome.kind === "killed") {
    if (outcome.why === "reused") {
      await audit(gw, "refresh.reuse_detected", { ...ids, data: { family: rt.family_id.slice(0, 12), tokens_revoked: outcome.revoked.length, ...mcpClient } });
    }
    await afterRevocation(gw, outcome.revoked, "client");
    if (rt.grant_id) await dropGrant(gw, rt.grant_id);
    if (outcome.why === "reused") {
      throw refused("reused", "This refresh token was already used: its whole family is revoked; run `ath authorize` again");
    }
    throw refused("revoked", "The upstream grant behind this refresh token is gone: run `ath authorize` again", { upstream: "upstream_grant_revoked" });
  }
  await audit(gw, "token.refreshed", { ...ids, data: { scopes: outcome.scopes, dpop: outcome.minted.jkt !== null, ...mcpClient } });
  return tokenResponse(gw, outcome.minted, {
    effective_scopes: outcome.scopes,
    provider_id: rt.provider_id,
    agent_id: rt.agent_id,
    scope_intersection: { agent_approved: outcome.approved, user_consented: rt.scopes, effective: outcome.scopes },
  });
}

// internal

/** --refresh-ttl in seconds: a refresh family's life from the consent. */
export function refreshTtl(gw: Gateway): number {
  return gw.opts.refreshTtlSeconds ?? LIMITS.refreshTtlDefaultSeconds;
}

/** --refresh-idle in seconds: a refresh token's life unused. */
export function refreshIdle(gw: Gateway): number {
  return gw.opts.refreshIdleSeconds ?? Math.min(LIMITS.refreshIdleDefaultSeconds, refreshTtl(gw));
}

function refused(reason: "reused" | "revoked" | "expired", message: string, extra: Record<string, unknown> = {}): AthError {
  return new AthError("INVALID_GRANT", message, { reason: `refresh_token_${reason}`, ...extra });
}

function raceLost(): AthError {
  return new AthError("INVALID_GRANT", "This refresh token was just used by another request of this client; use the tokens that request got", {
    reason: "refresh_token_spent",
  });
}
