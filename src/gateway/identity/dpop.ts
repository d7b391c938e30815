/**
 * DPoP (RFC 9449) proofs, the one rule (DESIGN §17): a compact JWS with header `typ: "dpop+jwt"`, `alg: "ES256"` and
 * the public `jwk` it is signed with; claims `htm` (this request's method), `htu` (this request's URL without query or
 * fragment), `iat` within ±60 s of now, a `jti` never seen before in its scope (per token, or per key at the token
 * endpoint), and — when a token goes with it — `ath`, the base64url SHA-256 of that token. No nonces.
 *
 * Which key may sign is the caller's rule: at the token endpoint, the agent's registered key (`registeredThumbprint`);
 * at the proxy, the key the token is bound to (`cnf.jkt`). Replays are recorded through the `recordJti` it is given
 * (the store's, so across instances), as attestations' are.
 */
import { base64url, calculateJwkThumbprint, compactVerify, decodeProtectedHeader, errors, exportJWK, importJWK, type JWK } from "jose";
import { LIMITS } from "../../protocol/index.ts";
import type { KeyResolver } from "../context.ts";

/** What a proof must match. */
export interface ProofCheck {
  method: string;
  /** The URL the agent called, as the gateway's public base URL plus the path: `htu` is compared without a query. */
  url: string;
  /** The access token sent with the proof: `ath` must be its hash. Absent at the token endpoint. */
  accessToken?: string;
  /** Where `jti` must be unused: the token's hash, or the key's thumbprint at the token endpoint. */
  replayScope: string;
}

/** A proof that does not hold: the message says which rule it broke (never a secret). */
export class DpopProofError extends Error {
  override readonly name = "DpopProofError";
}

/** What verification needs from outside: the clock, and the replay record (false when (scope, jti) was seen). */
export interface ProofDeps {
  now: number;
  recordJti(scope: string, jti: string, expiresAt: number, now: number): Promise<boolean>;
}

/** Verifies `proof`; returns the RFC 7638 thumbprint of the key that signed it. */
export async function verifyDpopProof(proof: string | null, c: ProofCheck, deps: ProofDeps): Promise<string> {
  if (proof === null || proof === "") throw new DpopProofError("no DPoP proof (the DPoP header)");
  if (proof.length > MAX_PROOF_CHARS || proof.split(".").length !== 3) throw new DpopProofError("the DPoP proof is not a compact JWS");
  let header: ReturnType<typeof decodeProtectedHeader>;
  try {
    header = decodeProtectedHeader(proof);
  } catch {
    throw new DpopProofError("the DPoP proof's header is not readable");
  }
  if (header.typ !== "dpop+jwt") throw new DpopProofError('the DPoP proof\'s typ must be "dpop+jwt"');
  if (header.alg !== "ES256") throw new DpopProofError("the DPoP proof must be signed with ES256");
  const jwk = publicJwk(header.jwk);
  let payload: Record<string, unknown>;
  try {
    const key = await importJWK(jwk, "ES256");
    const verified = await compactVerify(proof, key, { algorithms: ["ES256"] });
    payload = JSON.parse(new TextDecoder().decode(verified.payload)) as Record<string, unknown>;
  } catch (err) {
    if (err instanceof errors.JWSSignatureVerificationFailed) throw new DpopProofError("the DPoP proof's signature does not verify with its jwk");
    throw new DpopProofError("the DPoP proof could not be verified");
  }
  if (payload === null || typeof payload !== "object") throw new DpopProofError("the DPoP proof's claims are not an object");
  const { jti, htm, htu, iat, ath } = payload;
  if (typeof jti !== "string" || jti.length < 8 || jti.length > 256 || jti.includes("\0")) throw new DpopProofError("the DPoP proof needs a jti (8–256 characters)");
  if (htm !== c.method) throw new DpopProofError(`the DPoP proof's htm must be ${c.method}`);
  if (typeof htu !== "string" || withoutQuery(htu) !== withoutQuery(c.url)) throw new DpopProofError(`the DPoP proof's htu must be ${withoutQuery(c.url)}`);
  const { now } = deps;
  if (typeof iat !== "number" || Math.abs(iat * 1000 - now) > LIMITS.dpopSkewSeconds * 1000) {
    throw new DpopProofError(`the DPoP proof's iat must be within ${LIMITS.dpopSkewSeconds} s of now`);
  }
  if (c.accessToken !== undefined) {
    const expected = base64url.encode(new Uint8Array(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(c.accessToken))));
    if (ath !== expected) throw new DpopProofError("the DPoP proof's ath must be the base64url SHA-256 of the access token");
  }
  const jkt = await calculateJwkThumbprint(jwk, "sha256");
  // Replays: the (scope, jti) pair is recorded past the proof's window, in the store (so across instances).
  const fresh = await deps.recordJti(`dpop:${c.replayScope}`, jti, now + 2 * LIMITS.dpopSkewSeconds * 1000, now);
  if (!fresh) throw new DpopProofError("this DPoP proof's jti was already used");
  return jkt;
}

/** The RFC 7638 thumbprint of the agent's registered key (the only key whose proofs bind its tokens). */
export async function registeredThumbprint(keys: KeyResolver, agentId: string): Promise<string> {
  const { kty, crv, x, y } = await exportJWK(await keys.get(agentId));
  return calculateJwkThumbprint({ kty, crv, x, y } as JWK, "sha256");
}

// internal

const MAX_PROOF_CHARS = 8192;

function publicJwk(value: unknown): JWK {
  if (value === null || typeof value !== "object") throw new DpopProofError("the DPoP proof's header must carry its public jwk");
  const { kty, crv, x, y, d } = value as Record<string, unknown>;
  if (d !== undefined) throw new DpopProofError("the DPoP proof's jwk must not hold a private key");
  if (kty !== "EC" || crv !== "P-256" || typeof x !== "string" || typeof y !== "string") throw new DpopProofError("the DPoP proof's jwk must be a P-256 EC key");
  return { kty, crv, x, y };
}

function withoutQuery(url: string): string {
  if (!URL.canParse(url)) return url;
  const u = new URL(url);
  return `${u.origin}${u.pathname}`;
}
