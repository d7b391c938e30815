/**
 * The one verifyAttestation (DESIGN §3 "Identity and attestation", §8): ES256 compact JWS only, the claim
 * rules of the ATH schema (iss, sub, aud, iat, exp, jti all required), the signature against the agent's key,
 * and the jti replay cache — in that order, so no key is fetched for a token that is already wrong.
 */
import { compactVerify, decodeJwt, decodeProtectedHeader, errors } from "jose";
import { AthError } from "../../protocol/errors.ts";
import { LIMITS } from "../../protocol/constants.ts";
import { AttestationClaims, formatIssues } from "../../protocol/schemas.ts";
import type { KeyResolver } from "../context.ts";

export interface AttestationCheck {
  /** Expected aud: base_url (register, authorize) or `${base_url}/ath/token` (token). */
  audience: string;
  /** The body's agent_id at register; the registered agent_id at authorize and token. */
  agentId: string;
  /** Code for `sub` ≠ agentId: INVALID_ATTESTATION at register, AGENT_IDENTITY_MISMATCH afterwards. */
  subMismatch: "INVALID_ATTESTATION" | "AGENT_IDENTITY_MISMATCH";
  /** Epoch ms. */
  now: number;
}

export interface AttestationDeps {
  keys: KeyResolver;
  /** Store.recordJti: false when (agentId, jti) was already recorded and has not expired. */
  recordJti: (agentId: string, jti: string, expiresAtMs: number, nowMs: number) => Promise<boolean>;
}

/** Verifies an agent attestation and returns its claims; every failure is an AthError with the precise reason. */
export async function verifyAttestation(
  jwt: string,
  check: AttestationCheck,
  deps: AttestationDeps,
): Promise<AttestationClaims> {
  let alg: unknown;
  let payload: unknown;
  let unencoded = false;
  try {
    if (typeof jwt !== "string" || jwt.split(".").length !== 3) throw new TypeError("not compact");
    const header = decodeProtectedHeader(jwt);
    alg = header.alg;
    unencoded = header.b64 !== undefined;
    payload = decodeJwt(jwt);
  } catch {
    throw invalid("attestation is not a compact JWS (header.payload.signature)");
  }
  // Allow-list before any key work: none, HS*, RS*, ES384… never reach a key.
  if (alg !== "ES256") throw invalid(`attestation alg must be ES256, got ${show(String(alg))}`);
  // RFC 7797 unencoded payloads are not JWTs (RFC 7519 §7.2): the claims must be the signed, encoded payload.
  if (unencoded) throw invalid("attestation header must not carry b64 (RFC 7797)");
  const parsed = AttestationClaims.safeParse(payload);
  if (!parsed.success) throw invalid(`attestation claims are invalid: ${formatIssues(parsed.error).join("; ")}`);
  const claims = parsed.data;
  checkAttestationClaims(claims, check);

  await verifySignature(jwt, check.agentId, deps.keys);

  if (!(await deps.recordJti(check.agentId, claims.jti, claims.exp * 1000, check.now))) {
    throw invalid("attestation jti replayed");
  }
  return claims;
}

/**
 * The claim rules, pure (time comes in `check.now`): sub = agentId (→ `check.subMismatch`), iss = agentId or
 * its origin, aud contains `check.audience`, iat within ±5 min, exp in the future and ≤ iat + 1 h (+ 60 s leeway).
 */
export function checkAttestationClaims(claims: AttestationClaims, check: AttestationCheck): void {
  if (claims.sub !== check.agentId) {
    throw new AthError(
      check.subMismatch,
      `attestation sub ${show(claims.sub)} does not match agent_id ${show(check.agentId)}`,
    );
  }
  if (claims.iss !== check.agentId && claims.iss !== originOf(check.agentId)) {
    throw invalid(`attestation iss ${show(claims.iss)} must be the agent_id or its origin`);
  }
  const audiences = Array.isArray(claims.aud) ? claims.aud : [claims.aud];
  if (!audiences.includes(check.audience)) throw invalid(`attestation aud does not match ${check.audience}`);
  const nowSec = check.now / 1000;
  if (Math.abs(claims.iat - nowSec) > LIMITS.attestationSkewSeconds) {
    throw invalid(
      claims.iat > nowSec
        ? "attestation iat is more than 5 minutes in the future"
        : "attestation iat is more than 5 minutes in the past",
    );
  }
  if (claims.exp <= nowSec) throw invalid("attestation expired");
  if (claims.exp > claims.iat + LIMITS.attestationMaxLifetimeSeconds + LIMITS.attestationLifetimeLeewaySeconds) {
    throw invalid("attestation lifetime exceeds 1 hour (exp > iat + 3600, with 60 s of leeway)");
  }
}

// internal

/** Verifies against the agent's key; on a bad signature re-fetches the key once (it may have rotated). */
async function verifySignature(jwt: string, agentId: string, keys: KeyResolver): Promise<void> {
  if (await signatureValid(jwt, await keys.get(agentId))) return;
  let fresh: CryptoKey | null;
  try {
    fresh = await keys.refresh(agentId);
  } catch (err) {
    const why = err instanceof AthError ? ` (re-fetching the key failed: ${err.message})` : "";
    throw invalid(`attestation signature does not verify with the key of ${show(agentId)}${why}`);
  }
  if (fresh !== null && (await signatureValid(jwt, fresh))) return;
  throw invalid(`attestation signature does not verify with the key of ${show(agentId)}`);
}

async function signatureValid(jwt: string, key: CryptoKey): Promise<boolean> {
  try {
    await compactVerify(jwt, key, { algorithms: ["ES256"] });
    return true;
  } catch (err) {
    if (err instanceof errors.JWSSignatureVerificationFailed) return false;
    const why = err instanceof errors.JOSEError ? err.message : "verification failed";
    throw invalid(`attestation could not be verified: ${why}`);
  }
}

function originOf(agentId: string): string | undefined {
  if (!/^https?:\/\//.test(agentId) || !URL.canParse(agentId)) return undefined;
  return new URL(agentId).origin;
}

function invalid(message: string): AthError {
  return new AthError("INVALID_ATTESTATION", message);
}

/** An untrusted value, quoted and bounded, for error messages. */
function show(value: string): string {
  return JSON.stringify(value.length > 200 ? `${value.slice(0, 200)}…` : value);
}
