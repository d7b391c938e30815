/** The ATH bearer token of a proxy (or native API) request: present, known, unrevoked, unexpired. */
import { AthError, PREFIX } from "../../protocol/index.ts";
import type { TokenRecord } from "../../store/types.ts";
import type { Gateway } from "../context.ts";
import { hashSecret } from "../crypto/secrets.ts";

/** RFC 6750 §3: 401s carry a WWW-Authenticate challenge. */
const CHALLENGE = { "www-authenticate": 'Bearer realm="ath"' };

export async function authenticateBearer(gw: Gateway, req: Request): Promise<TokenRecord> {
  const header = req.headers.get("authorization") ?? "";
  const match = /^Bearer\s+(\S+)$/i.exec(header);
  if (!match?.[1] || !match[1].startsWith(PREFIX.token)) {
    throw new AthError("TOKEN_INVALID", "An ATH bearer token is required (Authorization: Bearer ath_tk_…)", undefined, { headers: CHALLENGE });
  }
  const token = await gw.store.getToken(hashSecret(match[1]));
  if (!token) throw new AthError("TOKEN_INVALID", undefined, undefined, { headers: CHALLENGE });
  if (token.revoked_at !== null) throw new AthError("TOKEN_REVOKED", undefined, undefined, { headers: CHALLENGE });
  if (token.expires_at <= gw.now()) throw new AthError("TOKEN_EXPIRED", undefined, undefined, { headers: CHALLENGE });
  return token;
}
