/**
 * A workload JWT's claims (DESIGN §23): the rules, pure — the clock comes in. `sub` (the agent_id, e.g. a SPIFFE ID)
 * must match one of the issuer's `subjects` patterns, `aud` name ath (its base URL, the endpoint's own audience, or the
 * issuer entry's `audience`), `exp` not passed and at most 10 minutes after `iat` (a minute of leeway, as attestations
 * get), `iat` not from the future; `jti`, when present, is recorded single-use by the caller (SPIFFE JWT-SVIDs may
 * carry none: then the short life is the bound).
 */
import { IDENTITY_LIMITS, subjectMatches } from "../../protocol/identity.ts";
import { LIMITS } from "../../protocol/constants.ts";
import { audienceIncludes, checkTimes, invalid, stringClaim } from "./issuer-jwt.ts";

export interface WorkloadCheck {
  /** The `subjects` patterns of the issuer. */
  subjects: readonly string[];
  /** Audiences accepted (any one). */
  audiences: readonly string[];
  /** Epoch ms. */
  now: number;
}

export interface WorkloadClaims {
  sub: string;
  exp: number;
  jti: string | null;
}

export function checkWorkloadClaims(c: Record<string, unknown>, check: WorkloadCheck): WorkloadClaims {
  const sub = stringClaim(c, "sub", 2048);
  if (!check.subjects.some((p) => subjectMatches(p, sub))) throw invalid(`the workload ${JSON.stringify(sub.slice(0, 200))} matches none of the issuer's subjects`);
  if (!check.audiences.some((a) => audienceIncludes(c.aud, a))) throw invalid(`the workload JWT's aud must be ${check.audiences[0]}`);
  const { exp, iat } = checkTimes(c, check.now, IDENTITY_LIMITS.issuerSkewSeconds);
  const from = iat ?? check.now / 1000;
  if (exp - from > IDENTITY_LIMITS.workloadMaxLifetimeSeconds + LIMITS.attestationLifetimeLeewaySeconds) {
    throw invalid("a workload JWT lives at most 10 minutes (exp − iat)");
  }
  const jti = c.jti === undefined ? null : stringClaim(c, "jti", 256);
  return { sub, exp, jti };
}
