/**
 * Upstream grants: the provider tokens behind one consent, sealed at rest, and their refresh — single-flight per
 * grant across requests in this process (a shared promise) and across `ath serve` instances (the store's lease +
 * row version), with rotated refresh tokens stored and a refused refresh marking the grant dead.
 */
import { AthError, LIMITS } from "../../protocol/index.ts";
import type { GrantRecord } from "../../store/types.ts";
import { audit } from "./audit.ts";
import type { Gateway } from "../context.ts";
import { GrantRefusedError, refreshGrant, revokeUpstream, type UpstreamTokenResponse } from "../oauth/client.ts";
import { revocationTargets } from "../oauth/quirks.ts";
import { findProvider, openProvider, outbound, requireProvider } from "./providers.ts";
import { parseScopeString } from "../rules/scopes.ts";
import { randomSecret } from "../crypto/secrets.ts";

export interface LiveAccess {
  accessToken: string;
  /** The grant version this token belongs to; pass it back to `refreshAfterRejection`. */
  version: number;
  canRefresh: boolean;
}

/** A new grant record for a consent, its tokens sealed; the caller inserts it (in the consent's transaction). */
export async function newGrant(
  gw: Gateway,
  o: { providerId: string; userId: string; agentId: string; tokens: UpstreamTokenResponse; requestedScopes: string[] },
): Promise<GrantRecord> {
  const grantId = randomSecret(16);
  const now = gw.now();
  const grant: GrantRecord = {
    grant_id: grantId,
    provider_id: o.providerId,
    user_id: o.userId,
    agent_id: o.agentId,
    access_token_sealed: await gw.sealer.seal(o.tokens.access_token, aad(grantId, "access")),
    refresh_token_sealed: o.tokens.refresh_token ? await gw.sealer.seal(o.tokens.refresh_token, aad(grantId, "refresh")) : null,
    expires_at: expiresAt(now, o.tokens.expires_in),
    scope: o.tokens.scope !== undefined ? parseScopeString(o.tokens.scope) : o.requestedScopes,
    status: "live",
    version: 1,
    refresh_owner: null,
    refresh_lease_until: null,
    created_at: now,
    updated_at: now,
  };
  return grant;
}

/** The access token to use now, refreshing first when it is expired or within 30 s of expiry (DESIGN §8). */
export async function currentAccess(gw: Gateway, grantId: string): Promise<LiveAccess> {
  // The warm path: a live, fresh grant (from the store's cache) needs no single-flight bookkeeping.
  const g = await gw.store.getGrant(grantId);
  if (fresh(gw, g)) return open(gw, g);
  return singleFlight(gw, grantId, (g) => isStale(gw, g), null);
}

/**
 * The grant's access as a warm call may keep it (proxy/plan.ts): when the grant is live and fresh, its opened access
 * token and until when it stays fresh (null: it does not expire); else — stale, dead, gone, or the store failing —
 * null, and the call reads it with `currentAccess`, which refreshes or says why not.
 */
export async function warmAccess(gw: Gateway, grantId: string): Promise<{ access: LiveAccess; freshUntil: number | null } | null> {
  try {
    const g = await gw.store.getGrant(grantId);
    return fresh(gw, g) ? { access: await open(gw, g), freshUntil: freshUntil(g) } : null;
  } catch {
    return null;
  }
}

/** After the provider answered 401 to `version`'s token: refresh once (unless another request already did). */
export async function refreshAfterRejection(gw: Gateway, grantId: string, version: number): Promise<LiveAccess> {
  return singleFlight(gw, grantId, (g) => g.version === version, version);
}

/**
 * Drops the grant and, when the provider has a revocation endpoint, revokes its tokens there — which tokens and how
 * is the provider's (oauth/quirks.ts: RFC 7009, or the token as Bearer, or a JSON body).
 */
export async function dropGrant(gw: Gateway, grantId: string): Promise<void> {
  const grant = await gw.store.deleteGrant(grantId);
  if (!grant) return;
  const record = await findProvider(gw, grant.provider_id);
  if (!record?.config.revocation_endpoint) return;
  try {
    const provider = await openProvider(gw, record);
    const statuses: number[] = [];
    for (const kind of revocationTargets(record.config, grant.refresh_token_sealed !== null)) {
      const sealed = kind === "refresh_token" ? grant.refresh_token_sealed! : grant.access_token_sealed;
      const result = await revokeUpstream(provider, await gw.sealer.open(sealed, aad(grantId, kind === "refresh_token" ? "refresh" : "access")), kind, outbound(gw));
      statuses.push(result.status);
      // A failure (RFC 7009 §2.2.1: 503, try later) did not revoke.
      if (!result.ok) throw new Error(`revocation endpoint answered ${statuses.join(", ")}`);
    }
    await audit(gw, "upstream.revoked", { provider_id: grant.provider_id, agent_id: grant.agent_id, data: { statuses } });
  } catch (err) {
    // RFC 7009 failures never reach the agent: revoke still answers 200.
    gw.log.warn(`upstream revocation failed for provider ${grant.provider_id}`, { error: String(err) });
    await audit(gw, "upstream.revocation_failed", { provider_id: grant.provider_id, agent_id: grant.agent_id, data: { error: String(err) } });
  }
}

// internal

const inflight = new Map<string, Promise<LiveAccess>>();
const POLL_MS = 25;


function aad(grantId: string, kind: "access" | "refresh"): string {
  return `grant:${grantId}:${kind}`;
}

/** A provider's `expires_in`, clamped to 0…1 year: a huge value must not overflow a BIGINT column. */
function expiresAt(now: number, expiresIn: number | undefined): number | null {
  if (expiresIn === undefined || !Number.isFinite(expiresIn)) return null;
  return now + Math.min(Math.max(Math.trunc(expiresIn), 0), 365 * 24 * 3600) * 1000;
}

/** Until when a grant's access token is used as it is (DESIGN §8: refreshed within 30 s of expiry); null: it does not expire. */
function freshUntil(g: GrantRecord): number | null {
  return g.expires_at === null ? null : g.expires_at - LIMITS.refreshMarginSeconds * 1000;
}

function isStale(gw: Gateway, g: GrantRecord): boolean {
  const until = freshUntil(g);
  return until !== null && until <= gw.now();
}

/** A live grant whose access token is fresh: the warm path, no refresh bookkeeping. */
function fresh(gw: Gateway, g: GrantRecord | null): g is GrantRecord {
  return g !== null && g.status === "live" && !isStale(gw, g);
}

function deadGrant(): AthError {
  return new AthError("TOKEN_EXPIRED", "The user's authorization at the provider was revoked or has lapsed; run authorize again", {
    reason: "upstream_grant_revoked",
  });
}

/**
 * The grant's access token, unsealed — once per sealed value: a proxied request would otherwise decrypt it every
 * time. The opened token lives in this process's memory only as long as the grant's current sealed value is its key.
 */
async function open(gw: Gateway, g: GrantRecord): Promise<LiveAccess> {
  let memo = opened.get(gw);
  if (!memo) opened.set(gw, (memo = new Map()));
  const hit = memo.get(g.grant_id);
  if (hit && hit.sealed === g.access_token_sealed && hit.access.version === g.version) return hit.access;
  const access = { accessToken: await gw.sealer.open(g.access_token_sealed, aad(g.grant_id, "access")), version: g.version, canRefresh: g.refresh_token_sealed !== null };
  memo.delete(g.grant_id);
  memo.set(g.grant_id, { sealed: g.access_token_sealed, access });
  if (memo.size > OPENED_MAX) memo.delete(memo.keys().next().value as string);
  return access;
}

/** Unsealed access tokens per gateway, by grant id (bounded; the oldest go first). */
const opened = new WeakMap<Gateway, Map<string, { sealed: string; access: LiveAccess }>>();
const OPENED_MAX = 50_000;

/** Coalesces concurrent callers in this process; `key` includes the version being replaced. */
function singleFlight(gw: Gateway, grantId: string, needsRefresh: (g: GrantRecord) => boolean, version: number | null): Promise<LiveAccess> {
  const key = `${grantId}:${version ?? "stale"}`;
  const running = inflight.get(key);
  if (running) return running;
  const p = refreshLoop(gw, grantId, needsRefresh).finally(() => inflight.delete(key));
  inflight.set(key, p);
  return p;
}

async function refreshLoop(gw: Gateway, grantId: string, needsRefresh: (g: GrantRecord) => boolean): Promise<LiveAccess> {
  const leaseMs = gw.opts.upstreamTimeoutMs + 5_000;
  // Waiting is counted in polls, not read off the clock: the clock is the gateway's (a test may freeze it).
  for (let polls = Math.ceil((leaseMs * 2) / POLL_MS); polls > 0; polls--) {
    const g = await gw.store.getGrant(grantId);
    if (!g || g.status === "dead") throw deadGrant();
    if (!needsRefresh(g) || !g.refresh_token_sealed) return open(gw, g);
    const owner = randomSecret(12);
    if (await gw.store.claimGrantRefresh(grantId, g.version, owner, gw.now(), leaseMs)) {
      return doRefresh(gw, g, owner);
    }
    // Another request (maybe another instance) holds the lease: wait for its result.
    await Bun.sleep(POLL_MS);
    const after = await gw.store.getGrant(grantId);
    if (after && after.version !== g.version && after.status === "live") return open(gw, after);
  }
  throw new AthError("OAUTH_ERROR", "Timed out waiting for the provider token refresh", { reason: "refresh_timeout" });
}

async function doRefresh(gw: Gateway, g: GrantRecord, owner: string): Promise<LiveAccess> {
  let tokens: UpstreamTokenResponse;
  try {
    const record = await requireProvider(gw, g.provider_id);
    const refreshToken = await gw.sealer.open(g.refresh_token_sealed!, aad(g.grant_id, "refresh"));
    tokens = await refreshGrant(await openProvider(gw, record), refreshToken, g.scope, outbound(gw));
  } catch (err) {
    const dead = err instanceof GrantRefusedError;
    await gw.store.releaseGrantRefresh(g.grant_id, owner, dead, gw.now());
    await audit(gw, dead ? "upstream.refresh_refused" : "upstream.refresh_failed", {
      provider_id: g.provider_id,
      agent_id: g.agent_id,
      user_id: g.user_id,
      data: { error: err instanceof Error ? err.message : String(err) },
    });
    if (dead) throw deadGrant();
    if (err instanceof AthError) throw err;
    throw new AthError("OAUTH_ERROR", `Refreshing the token at '${g.provider_id}' failed`, { provider_id: g.provider_id }, { cause: err });
  }
  const now = gw.now();
  const update = {
    access_token_sealed: await gw.sealer.seal(tokens.access_token, aad(g.grant_id, "access")),
    // Rotation: store the new refresh token when the provider returns one; keep the old one when it does not.
    refresh_token_sealed: tokens.refresh_token ? await gw.sealer.seal(tokens.refresh_token, aad(g.grant_id, "refresh")) : g.refresh_token_sealed,
    expires_at: expiresAt(now, tokens.expires_in),
    scope: tokens.scope !== undefined ? parseScopeString(tokens.scope) : g.scope,
  };
  if (!(await gw.store.completeGrantRefresh(g.grant_id, owner, update, now))) {
    throw new AthError("OAUTH_ERROR", "The token refresh lease was lost", { reason: "lease_lost" });
  }
  await audit(gw, "upstream.refreshed", { provider_id: g.provider_id, agent_id: g.agent_id, user_id: g.user_id, data: { rotated: Boolean(tokens.refresh_token) } });
  return { accessToken: tokens.access_token, version: g.version + 1, canRefresh: true };
}
