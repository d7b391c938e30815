/**
 * An access token alone — no refresh token, no family — for the grants whose tokens are not renewed by ath (DESIGN
 * §23): an ID-JAG's (the IdP decides again each time: draft-ietf-oauth-identity-assertion-authz-grant, "Refresh
 * Token": the resource authorization server SHOULD NOT return one) and a delegation's (the sub-agent asks its parent).
 */
import { PREFIX } from "../../protocol/index.ts";
import type { Delegation } from "../../store/identity-types.ts";
import type { Store, TokenRecord } from "../../store/types.ts";
import type { Gateway } from "../context.ts";
import { hashSecret, mintSecret } from "../crypto/secrets.ts";
import type { Grantee } from "./refresh.ts";

/** Inserts the token (inside the caller's transaction); returns its secret and record. */
export async function mintAccessToken(
  gw: Gateway,
  tx: Store,
  who: Grantee,
  o: { expiresAt: number; jkt: string | null; delegation?: Delegation },
): Promise<{ accessToken: string; record: TokenRecord }> {
  const accessToken = mintSecret(PREFIX.token);
  const record: TokenRecord = {
    token_hash: hashSecret(accessToken),
    token_id: mintSecret(PREFIX.tokenId, 16),
    ...who,
    created_at: gw.now(),
    expires_at: o.expiresAt,
    revoked_at: null,
    family_id: null,
    jkt: o.jkt,
    delegation: o.delegation ?? null,
  };
  await tx.createToken(record);
  return { accessToken, record };
}
