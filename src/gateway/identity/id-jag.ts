/**
 * An Identity Assertion JWT Authorization Grant's claims (DESIGN §23; draft-ietf-oauth-identity-assertion-authz-grant
 * §3): the rules, pure — the clock comes in. `aud` = ath's issuer (or the issuer entry's `audience`), `client_id` =
 * the client that authenticated, `exp` not passed (≤ 5 min left is fine), `iat` not from the future, `sub` the person,
 * `jti` for the single-use record, `resource` the one the door expects, `scope` what the IdP granted (absent: no limit
 * of its own — the client's approval still applies).
 */
import { IDENTITY_LIMITS } from "../../protocol/identity.ts";
import { audienceIncludes, checkTimes, invalid, stringClaim } from "./issuer-jwt.ts";

export interface IdJagCheck {
  /** The `aud` it must carry. */
  audience: string;
  /** The authenticated client's id, which its `client_id` must equal. */
  clientId: string;
  /** Epoch ms. */
  now: number;
}

export interface IdJagClaims {
  iss: string;
  sub: string;
  jti: string;
  /** Epoch seconds. */
  exp: number;
  resource: string;
  /** The IdP's scopes, or null when it named none. */
  scopes: string[] | null;
}

export function checkIdJagClaims(c: Record<string, unknown>, check: IdJagCheck): IdJagClaims {
  const iss = stringClaim(c, "iss", 2048);
  if (!audienceIncludes(c.aud, check.audience)) throw invalid(`the assertion's aud must be ${check.audience}`);
  const { exp } = checkTimes(c, check.now, IDENTITY_LIMITS.issuerSkewSeconds);
  if (c.iat === undefined) throw invalid("the assertion has no iat");
  const sub = stringClaim(c, "sub");
  const clientId = stringClaim(c, "client_id", 2048);
  if (clientId !== check.clientId) throw invalid("the assertion was issued to another client (client_id)");
  const jti = stringClaim(c, "jti", 256);
  const resource = stringClaim(c, "resource", 2048);
  if (c.scope !== undefined && typeof c.scope !== "string") throw invalid("the assertion's scope claim is not a string");
  const scopes = typeof c.scope === "string" ? [...new Set(c.scope.split(" ").filter(Boolean))] : null;
  return { iss, sub, jti, exp, resource, scopes };
}
