/**
 * ATH tokens: the one read path (`findToken`), the bearer check of the proxy (and native API), minting and
 * revocation.
 */
import { AthError, PREFIX } from "../../protocol/index.ts";
import type { AgentRecord, TokenFilter, TokenRecord } from "../../store/types.ts";
import type { Gateway } from "../context.ts";
import { hashSecret } from "../crypto/secrets.ts";
import { requireApproved } from "./agents.ts";
import { audit } from "./audit.ts";
import { dropGrant } from "./grants.ts";

/** The token a presented secret stands for, or null. */
export function findToken(gw: Gateway, presented: string): Promise<TokenRecord | null> {
  return gw.store.getToken(presentedHash(presented));
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
  if (token.expires_at <= gw.now()) throw new AthError("TOKEN_EXPIRED", undefined, undefined, { headers: CHALLENGE });
  return token;
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

/** One token by its record (the owner's `/ath/revoke`): revoked even when expired, as that endpoint always did. */
export async function revokeToken(gw: Gateway, token: TokenRecord, by: "client" | "admin"): Promise<void> {
  const revoked = await gw.store.revokeToken(token.token_hash, gw.now());
  await afterRevocation(gw, revoked ? [revoked] : [], by);
}

/**
 * What follows a revocation once it committed: each token's `token.revoked` event, and each upstream grant dropped and
 * revoked at the provider. Called outside any transaction — it calls the provider.
 */
export async function afterRevocation(gw: Gateway, revoked: TokenRecord[], by: "client" | "admin"): Promise<void> {
  const grants = new Set<string>();
  for (const t of revoked) {
    if (t.grant_id) grants.add(t.grant_id);
    await audit(gw, "token.revoked", { client_id: t.client_id, agent_id: t.agent_id, provider_id: t.provider_id, user_id: t.user_id, data: { by, token_id: t.token_id } });
  }
  for (const grantId of grants) await dropGrant(gw, grantId);
}
