/**
 * A JWT from a trusted issuer (DESIGN §23) — an ID-JAG or a workload JWT: compact JWS, an asymmetric `alg` from the
 * allow-list (never `none`, never HS*: the verifier holds no shared secret), the `typ` its use asks for, and a
 * signature by one of the issuer's keys (identity/jwks.ts) — in that order, so no key is fetched for a JWT already
 * wrong. The claims are the caller's (identity/id-jag.ts, identity/workload-jwt.ts): each use has its own rules.
 * Failures are AssertionError with a reason the caller shapes for its wire.
 */
import { decodeJwt, decodeProtectedHeader, errors } from "jose";
import type { JwksCache, JwksSource } from "./jwks.ts";
import { JwksError } from "./jwks.ts";

/** Why an issuer's JWT is refused (DESIGN §23 "Pinned": the `details.reason` at /ath/token, minus its prefix). */
export type AssertionReason = "assertion_invalid" | "assertion_expired" | "assertion_replayed" | "issuer_untrusted";

export class AssertionError extends Error {
  override readonly name = "AssertionError";
  constructor(
    readonly reason: AssertionReason,
    message: string,
  ) {
    super(message);
  }
}

/** Asymmetric algorithms only (jose's names); an issuer's JWT signed otherwise is refused before any key is fetched. */
export const ISSUER_ALGORITHMS = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA", "Ed25519"];

/** The claims of a JWT, unverified — only to find its issuer; null when it is not a compact JWT with an object payload. */
export function peekClaims(jwt: string): Record<string, unknown> | null {
  if (typeof jwt !== "string" || jwt.split(".").length !== 3) return null;
  try {
    const claims = decodeJwt(jwt);
    return claims !== null && typeof claims === "object" ? (claims as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/** Verifies header and signature; returns the claims (still to be checked by the caller). */
export async function verifyIssuerJwt(jwt: string, keys: JwksSource, o: { typ?: string; jwks: JwksCache }): Promise<Record<string, unknown>> {
  let header: ReturnType<typeof decodeProtectedHeader>;
  try {
    if (jwt.split(".").length !== 3) throw new TypeError("not compact");
    header = decodeProtectedHeader(jwt);
  } catch {
    throw invalid("the assertion is not a compact JWS (header.payload.signature)");
  }
  const alg = String(header.alg);
  if (!ISSUER_ALGORITHMS.includes(alg)) throw invalid(`the assertion's alg ${JSON.stringify(alg.slice(0, 20))} is not allowed (asymmetric algorithms only)`);
  if (header.b64 !== undefined || header.crit !== undefined) throw invalid("the assertion's header must not carry b64 or crit");
  if (o.typ !== undefined && normalTyp(header.typ) !== o.typ) throw invalid(`the assertion's typ must be ${o.typ}`);
  let payload: Uint8Array;
  try {
    payload = await o.jwks.verify(jwt, keys, ISSUER_ALGORITHMS);
  } catch (err) {
    if (err instanceof JwksError) throw invalid(err.message);
    if (err instanceof errors.JWKSNoMatchingKey) throw invalid("no key of the issuer's JWKS matches the assertion's kid and alg");
    if (err instanceof errors.JWSSignatureVerificationFailed) throw invalid("the assertion's signature does not verify with the issuer's keys");
    if (err instanceof errors.JOSEError) throw invalid(`the assertion could not be verified: ${err.message}`);
    throw err;
  }
  let claims: unknown;
  try {
    claims = JSON.parse(new TextDecoder().decode(payload));
  } catch {
    throw invalid("the assertion's payload is not JSON");
  }
  if (claims === null || typeof claims !== "object" || Array.isArray(claims)) throw invalid("the assertion's payload is not a JSON object");
  return claims as Record<string, unknown>;
}

/** `exp`, `iat` and `nbf` against the clock (epoch ms): expired → assertion_expired; from the future → invalid. */
export function checkTimes(c: Record<string, unknown>, nowMs: number, skewSeconds: number): { exp: number; iat: number | null } {
  const { exp, iat, nbf } = c;
  if (typeof exp !== "number" || !Number.isFinite(exp)) throw invalid("the assertion has no exp");
  if (iat !== undefined && (typeof iat !== "number" || !Number.isFinite(iat))) throw invalid("the assertion's iat is not a number");
  const now = nowMs / 1000;
  if (exp <= now) throw new AssertionError("assertion_expired", "the assertion expired");
  if (typeof iat === "number" && iat > now + skewSeconds) throw invalid("the assertion's iat is in the future");
  if (nbf !== undefined && (typeof nbf !== "number" || nbf > now + skewSeconds)) throw invalid("the assertion is not valid yet (nbf)");
  return { exp, iat: typeof iat === "number" ? iat : null };
}

/** Whether the `aud` claim (a string or an array) names `audience`. */
export function audienceIncludes(aud: unknown, audience: string): boolean {
  return typeof aud === "string" ? aud === audience : Array.isArray(aud) && aud.includes(audience);
}

/** A string claim of bounded length without NUL, or the refusal naming it. */
export function stringClaim(c: Record<string, unknown>, name: string, max = 1024): string {
  const v = c[name];
  if (typeof v !== "string" || v.length === 0 || v.length > max || v.includes("\0")) throw invalid(`the assertion's ${name} claim is missing or malformed`);
  return v;
}

export function invalid(message: string): AssertionError {
  return new AssertionError("assertion_invalid", message);
}

// internal

/** RFC 7515 §4.1.9: `typ` may omit the `application/` prefix; compared case-insensitively. */
function normalTyp(typ: unknown): string | undefined {
  return typeof typ === "string" ? typ.toLowerCase().replace(/^application\//, "") : undefined;
}
