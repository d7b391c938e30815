/**
 * DPoP proofs (RFC 9449) signed with the agent's own key (DESIGN §17): one fresh proof per request — to the token
 * endpoint (no `ath`) and with every proxied call (`ath` = the hash of the access token). The gateway binds the
 * tokens it issues against a proof to this key, so a copied token is useless without it.
 */
import { base64url, SignJWT } from "jose";
import type { AgentKey } from "./keys.ts";

export interface ProofInput {
  method: string;
  /** The request URL; `htu` is it without query and fragment. */
  url: string;
  /** The access token the request carries, if any. */
  accessToken?: string;
  /** Epoch ms; default Date.now(). */
  now?: number;
}

/** A proof JWT: header `{typ: "dpop+jwt", alg: "ES256", jwk}`, claims `jti`, `htm`, `htu`, `iat` and `ath` with a token. */
export async function signDpopProof(key: AgentKey, p: ProofInput): Promise<string> {
  const u = new URL(p.url);
  const claims: Record<string, unknown> = {
    jti: base64url.encode(crypto.getRandomValues(new Uint8Array(16))),
    htm: p.method.toUpperCase(),
    htu: `${u.origin}${u.pathname}`,
    iat: Math.floor((p.now ?? Date.now()) / 1000),
  };
  if (p.accessToken !== undefined) claims.ath = await accessTokenHash(p.accessToken);
  return new SignJWT(claims).setProtectedHeader({ typ: "dpop+jwt", alg: "ES256", jwk: key.publicJwk }).sign(key.privateKey);
}

/** RFC 9449 §4.2: `ath`, the base64url SHA-256 of the access token. */
export async function accessTokenHash(token: string): Promise<string> {
  return base64url.encode(new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(token))));
}
