/**
 * ATH tokens: the one read path (`findToken`), the bearer check of the proxy (and native API) — a delegated token's
 * chain included (DESIGN §23) —, minting and revocation.
 */
import { AthError, PREFIX } from "../../protocol/index.ts";
import { MCP_PREFIX } from "../../protocol/mcp-front-door.ts";
import type { AgentRecord, RefreshTokenRecord, TokenFilter, TokenRecord } from "../../store/types.ts";
import type { Gateway } from "../context.ts";
import { hashSecret } from "../crypto/secrets.ts";
import { requireApproved } from "./agents.ts";
import { audit } from "./audit.ts";
import { dropGrant } from "./grants.ts";
import { DpopProofError, verifyDpopProof } from "../identity/dpop.ts";
import { actClaim, requireLiveChain, revokeDescendantsOf } from "./delegation-chain.ts";
import type { ProviderConfig } from "../../protocol/index.ts";

/** The token a presented secret stands for, or null. */
export function findToken(gw: Gateway, presented: string): Promise<TokenRecord | null> {
  return gw.store.getToken(presentedHash(presented));
}

/** The token with this public `token_id` (ath_tkid_…), live or not, or null. */
export async function findTokenById(gw: Gateway, tokenId: string): Promise<TokenRecord | null> {
  const [token] = await gw.store.listTokens({ token_id: tokenId }, { now: gw.now(), limit: 1 });
  return token ?? null;
}

/** The refresh token a presented `ath_rt_…` secret stands for, or null. */
export function findRefreshToken(gw: Gateway, presented: string): Promise<RefreshTokenRecord | null> {
  return gw.store.getRefreshToken(hashSecret(presented));
}

/**
 * SHA-256 of a presented token, remembered by the token: an agent presents the same token on every call, and the
 * store's cache is keyed by the hash. Bounded (emptied when full: a flood of made-up tokens only costs hashing again);
 * a revoked token found here still reads as revoked — the record, not this map, says so.
 */
function presentedHash(presented: string): string {
  let hash = presentedHashes.get(presented);
  if (hash === undefined) {
    hash = hashSecret(presented);
    if (presentedHashes.size >= PRESENTED_HASHES_MAX) presentedHashes.clear();
    presentedHashes.set(presented, hash);
  }
  return hash;
}
const presentedHashes = new Map<string, string>();
const PRESENTED_HASHES_MAX = 10_000;

/** RFC 6750 §3: 401s carry a WWW-Authenticate challenge. */
const CHALLENGE = { "www-authenticate": 'Bearer realm="ath"' };

/** A presented bearer token that is known, unrevoked and unexpired — else 401 TOKEN_INVALID / REVOKED / EXPIRED. */
export async function requireLiveToken(gw: Gateway, presented: string | null): Promise<TokenRecord> {
  if (!presented?.startsWith(PREFIX.token)) {
    throw new AthError("TOKEN_INVALID", "An ATH bearer token is required (Authorization: Bearer ath_tk_…)", undefined, { headers: CHALLENGE });
  }
  const token = await findToken(gw, presented);
  if (!token) throw new AthError("TOKEN_INVALID", undefined, undefined, { headers: CHALLENGE });
  if (token.revoked_at !== null) throw new AthError("TOKEN_REVOKED", undefined, undefined, { headers: CHALLENGE });
  if (tokenExpired(token, gw.now())) throw new AthError("TOKEN_EXPIRED", undefined, undefined, { headers: CHALLENGE });
  // DESIGN §23: a delegated token stands only while every token it descends from does
  if (token.delegation) await requireLiveChain(gw, token, CHALLENGE);
  return token;
}

/** Whether a token has expired at `now` (the clock's part of requireLiveToken; proxy/plan.ts asks it of a kept token). */
export function tokenExpired(token: Pick<TokenRecord, "expires_at">, now: number): boolean {
  return token.expires_at <= now;
}

/**
 * The token read again from the database itself (a transaction reads past the cache), after its grant turned up gone:
 * a revocation drops the token, then its grant, and a request that read the token before this instance heard of the
 * revocation must still be told TOKEN_REVOKED, not a lapsed grant.
 */
export async function requireNotRevoked(gw: Gateway, presented: string): Promise<void> {
  const fresh = await gw.store.transaction((tx) => tx.getToken(hashSecret(presented)));
  if (fresh?.revoked_at != null) throw new AthError("TOKEN_REVOKED", undefined, undefined, { headers: CHALLENGE });
}

/**
 * A live token whose agent is still approved — else as requireLiveToken, or 403 AGENT_UNAPPROVED once the agent was
 * suspended, denied or its approval lapsed (DESIGN §14). The agent comes from the store's cache, which a status change
 * invalidates at once, here and on every other instance (store/cached.ts). Both are returned: the caller needs the
 * agent too (its approval rules) and must not read it again.
 */
export async function requireUsableToken(gw: Gateway, presented: string | null): Promise<{ token: TokenRecord; agent: AgentRecord }> {
  const token = await requireLiveToken(gw, presented);
  const agent = await gw.store.getAgentByClientId(token.client_id);
  if (!agent) throw new AthError("TOKEN_INVALID", undefined, undefined, { headers: CHALLENGE });
  requireApproved(gw, agent);
  return { token, agent };
}

/**
 * Which door a token opens (RFC 8707 audience): an MCP client's token (its client is `mcp_…`) its MCP endpoint only,
 * an agent's the proxy (and native /api) only. Presented at the other → 401 TOKEN_INVALID, as a token unknown there.
 */
export function requireDoor(token: TokenRecord, door: "proxy" | "mcp"): void {
  if (!opensDoor(token, door)) {
    throw new AthError("TOKEN_INVALID", `This token was issued for ${door === "proxy" ? "an MCP endpoint" : "the proxy"}, not for this endpoint`, { reason: "audience" }, { headers: CHALLENGE });
  }
}

/** Whether the token opens that door (see requireDoor). */
export function opensDoor(token: TokenRecord, door: "proxy" | "mcp"): boolean {
  return token.client_id.startsWith(MCP_PREFIX.client) === (door === "mcp");
}

/** Whether tokens for this provider must be DPoP-bound: `--require-dpop`, or the provider's `require_dpop` (DESIGN §17). */
export function dpopRequired(gw: Gateway, config: ProviderConfig | undefined): boolean {
  return gw.opts.requireDpop === true || config?.require_dpop === true;
}

/** 400 `dpop_required` at the token endpoint when tokens for this provider must be DPoP-bound and no proof came. */
export function requireProofWhereNeeded(gw: Gateway, jkt: string | null, config: ProviderConfig | undefined): void {
  if (jkt === null && dpopRequired(gw, config)) {
    throw new AthError("INVALID_REQUEST", "Tokens here are DPoP-bound: send a DPoP proof signed by the agent's key", { reason: "dpop_required" });
  }
}

/** What a caller of the proxy presents (http/request.ts `callerCredentials` reads it off the request). */
export interface CallerCredentials {
  token: string | null;
  scheme: "bearer" | "dpop";
  /** The DPoP header, if any. */
  proof: string | null;
  method: string;
  /** The public URL of the request without its query: what the proof's `htu` must be. */
  url: string;
}

/**
 * The proxy's authentication step (and the native API's): the token of `Authorization: Bearer …` or `Authorization:
 * DPoP …`, live and its agent approved (requireUsableToken); then its binding (RFC 9449, DESIGN §17). A DPoP-bound token
 * needs the DPoP scheme and a proof of this request by the bound key; a bearer token is refused where DPoP is required
 * (`providerId`: the provider called; by default the token's own, as for the approval poll). Returns the token and its
 * agent.
 */
export async function requireCallerToken(gw: Gateway, c: CallerCredentials, providerId?: string): Promise<{ token: TokenRecord; agent: AgentRecord }> {
  const { token, agent } = await requireUsableToken(gw, c.token);
  if (c.scheme === "dpop") {
    let jkt: string;
    try {
      jkt = await verifyDpopProof(c.proof, { method: c.method, url: c.url, accessToken: c.token!, replayScope: token.token_hash }, proofDeps(gw));
    } catch (err) {
      if (err instanceof DpopProofError) throw invalidProof(err.message);
      throw err;
    }
    if (token.jkt && jkt !== token.jkt) throw invalidProof("the DPoP proof is signed by another key than the one this token is bound to");
    return { token, agent };
  }
  if (token.jkt) {
    throw new AthError("TOKEN_INVALID", "This token is DPoP-bound: send it as `Authorization: DPoP <token>` with a DPoP proof", undefined, {
      headers: { "www-authenticate": 'DPoP algs="ES256", error="invalid_token"' },
    });
  }
  if (dpopRequired(gw, (await gw.store.getProvider(providerId ?? token.provider_id))?.config)) {
    throw new AthError("TOKEN_INVALID", "Bearer tokens are refused here: DPoP-bound tokens only (RFC 9449)", { reason: "dpop_required" }, {
      headers: { "www-authenticate": 'DPoP algs="ES256"' },
    });
  }
  return { token, agent };
}

/** The clock and the store's replay record, for DPoP proofs (identity/dpop.ts is given them). */
export function proofDeps(gw: Gateway) {
  return { now: gw.now(), recordJti: (scope: string, jti: string, expiresAt: number, now: number) => gw.store.recordJti(scope, jti, expiresAt, now) };
}

/**
 * Revocation, the one way (`/ath/revoke`, the admin API, removing an agent): every live token matching `filter` is
 * revoked at once, then each one's upstream grant is dropped and revoked at the provider (RFC 7009; a provider's
 * failure is logged and audited, never surfaced), and each token gets its `token.revoked` event. Returns the tokens
 * revoked now (already revoked or expired ones are left as they are).
 */
export async function revokeTokens(gw: Gateway, filter: TokenFilter, by: "client" | "admin"): Promise<TokenRecord[]> {
  const revoked = await gw.store.revokeTokensWhere(filter, gw.now());
  await afterRevocation(gw, revoked, by);
  return revoked;
}

/**
 * One token by its record (the owner's `/ath/revoke`): revoked even when expired, as that endpoint always did — and
 * with it its whole refresh family (DESIGN §17), every other access token of the family included.
 */
export async function revokeToken(gw: Gateway, token: TokenRecord, by: "client" | "admin"): Promise<void> {
  const revoked = await gw.store.revokeToken(token.token_hash, gw.now());
  const family = token.family_id ? await gw.store.revokeRefreshFamily(token.family_id, gw.now()) : [];
  await afterRevocation(gw, [...(revoked ? [revoked] : []), ...family.filter((t) => t.token_hash !== token.token_hash)], by);
}

/** A refresh token's family, by the refresh token's record (`/ath/revoke` of a refresh token). */
export async function revokeRefreshFamily(gw: Gateway, rt: RefreshTokenRecord, by: "client" | "admin"): Promise<void> {
  const revoked = await gw.store.revokeRefreshFamily(rt.family_id, gw.now());
  await afterRevocation(gw, revoked, by);
  if (rt.grant_id) await dropGrant(gw, rt.grant_id);
  await audit(gw, "refresh.revoked", { client_id: rt.client_id, agent_id: rt.agent_id, provider_id: rt.provider_id, user_id: rt.user_id, data: { by, tokens_revoked: revoked.length } });
}

/**
 * What follows a revocation once it committed: the tokens delegated from the revoked ones (DESIGN §23), to any depth,
 * revoked in the store too (each use already refuses them: domain/delegation-chain.ts); each token's `token.revoked`
 * event (a delegated one's names its chain); and each upstream grant dropped and revoked at the provider — never for a
 * delegated token alone: the grant is its root's. Called outside any transaction — it calls the provider.
 */
export async function afterRevocation(gw: Gateway, revoked: TokenRecord[], by: "client" | "admin"): Promise<void> {
  const descendants = revoked.length === 0 ? [] : await revokeDescendantsOf(gw, revoked);
  const grants = new Set<string>();
  for (const t of [...revoked, ...descendants]) {
    if (t.grant_id && !t.delegation) grants.add(t.grant_id);
    const act = actClaim(t.delegation);
    const data = { by, token_id: t.token_id, ...(act ? { act, with_ancestor: descendants.includes(t) } : {}) };
    await audit(gw, "token.revoked", { client_id: t.client_id, agent_id: t.agent_id, provider_id: t.provider_id, user_id: t.user_id, data });
  }
  for (const grantId of grants) await dropGrant(gw, grantId);
}

function invalidProof(why: string): AthError {
  return new AthError("TOKEN_INVALID", `Invalid DPoP proof: ${why}`, { reason: "invalid_dpop_proof" }, {
    headers: { "www-authenticate": 'DPoP algs="ES256", error="invalid_dpop_proof"' },
  });
}
