/**
 * ATH tokens: the one read path (`findToken`), the bearer check of the proxy (and native API), minting and
 * revocation.
 */
import { AthError, PREFIX } from "../../protocol/index.ts";
import type { TokenRecord } from "../../store/types.ts";
import type { Gateway } from "../context.ts";
import { hashSecret } from "../crypto/secrets.ts";
import { requireApproved } from "./agents.ts";

/** The token a presented secret stands for, or null. */
export function findToken(gw: Gateway, presented: string): Promise<TokenRecord | null> {
  return gw.store.getToken(hashSecret(presented));
}

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
 * A live token whose agent is still approved — else as requireLiveToken, or 403 AGENT_UNAPPROVED once the agent was
 * suspended, denied or its approval lapsed (DESIGN §14). The agent comes from the store's cache, which a status change
 * invalidates at once, here and on every other instance (store/cached.ts).
 */
export async function requireUsableToken(gw: Gateway, presented: string | null): Promise<TokenRecord> {
  const token = await requireLiveToken(gw, presented);
  const agent = await gw.store.getAgentByClientId(token.client_id);
  if (!agent) throw new AthError("TOKEN_INVALID", undefined, undefined, { headers: CHALLENGE });
  requireApproved(gw, agent);
  return token;
}
