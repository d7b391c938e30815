/**
 * Signs the agent attestation: a compact ES256 JWT proving the agent holds the key behind its agent_id
 * (DESIGN §3 "Identity and attestation"). A fresh one goes with every register, authorize and token call.
 */
import { base64url, SignJWT } from "jose";
import type { AgentKey } from "./keys.ts";

export interface AttestationOptions {
  agentId: string;
  /** The gateway's base_url (register, authorize) or `${base_url}/ath/token` (token). */
  audience: string;
  /** Lifetime; the gateway accepts at most 3600. Default 60. */
  ttlSeconds?: number;
  /** Epoch milliseconds; default Date.now(). */
  now?: number;
}

/**
 * An attestation with header `{alg: "ES256", typ: "JWT", kid: <thumbprint>}` and claims
 * iss = sub = agentId, aud, iat, exp and a random 128-bit jti (the gateway rejects replays).
 * @example await signAttestation(key, { agentId: key.didKey, audience: "https://gw.example" })
 */
export async function signAttestation(key: AgentKey, o: AttestationOptions): Promise<string> {
  const ttl = o.ttlSeconds ?? 60;
  if (!Number.isInteger(ttl) || ttl <= 0) throw new TypeError("ttlSeconds must be a positive integer");
  const iat = Math.floor((o.now ?? Date.now()) / 1000);
  return new SignJWT({})
    .setProtectedHeader({ alg: "ES256", typ: "JWT", kid: key.thumbprint })
    .setIssuer(o.agentId)
    .setSubject(o.agentId)
    .setAudience(o.audience)
    .setIssuedAt(iat)
    .setExpirationTime(iat + ttl)
    .setJti(base64url.encode(crypto.getRandomValues(new Uint8Array(16))))
    .sign(key.privateKey);
}
