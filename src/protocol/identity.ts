/**
 * Enterprise and workload identity, and delegation (DESIGN §23): the trusted-issuer entry (the providers file's
 * `trusted_issuers` and the admin API), the grant and token-type URNs, the limits, and the `act` chain a delegated
 * token carries (RFC 8693 §4.1) as introspection and the admin API show it.
 */
import { z } from "zod";

/** RFC 7523 §2.1 and RFC 8693 §2.1: the grant types of §23, and the token types a token exchange names. */
export const GRANT_TYPES = {
  jwtBearer: "urn:ietf:params:oauth:grant-type:jwt-bearer",
  tokenExchange: "urn:ietf:params:oauth:grant-type:token-exchange",
} as const;

export const TOKEN_TYPES = {
  accessToken: "urn:ietf:params:oauth:token-type:access_token",
  jwt: "urn:ietf:params:oauth:token-type:jwt",
} as const;

/** The `typ` of an Identity Assertion JWT Authorization Grant (draft-ietf-oauth-identity-assertion-authz-grant). */
export const ID_JAG_TYP = "oauth-id-jag+jwt";

export const IDENTITY_LIMITS = {
  /** A workload JWT lives at most 10 minutes (exp − iat). */
  workloadMaxLifetimeSeconds: 600,
  /** Clock skew allowed on `iat`/`nbf` of an issuer's JWTs. */
  issuerSkewSeconds: 60,
  /** How long a fetched JWKS is kept, at most. */
  jwksMaxCacheMs: 3_600_000,
  /** An unknown `kid` refetches the issuer's JWKS at most this often. */
  jwksRefetchIntervalMs: 60_000,
  /** `--max-delegation-depth`: exchanges from a root token (the 4th is refused). */
  delegationDepthDefault: 3,
  /** The largest budget share a delegation may name. */
  maxBudget: 1_000_000_000,
} as const;

/**
 * A `subjects` pattern: `*` matches any run of characters except `/` — `spiffe://corp/agents/*` is every workload
 * directly under `agents/`; `**` crosses `/` too. Nothing else is special.
 */
const subjectPattern = z
  .string()
  .min(1)
  .max(512)
  .regex(/^[^\u0000-\u001f\u007f]+$/, "no control characters")
  .refine((p) => p.split("*").length <= 17, { message: "at most 16 wildcards" });

/** A JWK as a JWKS holds it: public keys only. */
const publicJwk = z.looseObject({ kty: z.string() }).refine((k) => !("d" in k) && !("p" in k) && !("k" in k), {
  message: "a JWKS holds public keys only (no d, p or k member)",
});

/** One trusted issuer (DESIGN §23): its JWTs are checked against `jwks_uri` (fetched) or an inline `jwks`. */
export const TrustedIssuer = z
  .strictObject({
    issuer: z.string().min(1).max(2048).refine((s) => URL.canParse(s), { message: "the issuer must be a URL (its `iss` claim)" }),
    jwks_uri: z.string().max(2048).refine((s) => URL.canParse(s) && /^https?:$/.test(new URL(s).protocol), { message: "jwks_uri must be an http(s) URL" }).optional(),
    jwks: z.strictObject({ keys: z.array(publicJwk).min(1).max(100) }).optional(),
    kind: z.enum(["idp", "workload"]),
    /** `kind: workload`: the `sub` patterns whose workloads may register; required there. */
    subjects: z.array(subjectPattern).min(1).max(100).optional(),
    /** The `aud` this issuer's JWTs carry, when not ath's own (default: ath's issuer/base URL). */
    audience: z.string().min(1).max(2048).optional(),
  })
  .superRefine((t, ctx) => {
    if ((t.jwks_uri === undefined) === (t.jwks === undefined)) ctx.addIssue({ code: "custom", path: ["jwks_uri"], message: "give exactly one of jwks_uri and jwks" });
    if (t.kind === "workload" && t.subjects === undefined) ctx.addIssue({ code: "custom", path: ["subjects"], message: "required for kind workload" });
  });
export type TrustedIssuer = z.infer<typeof TrustedIssuer>;
export const TrustedIssuers = z.array(TrustedIssuer).max(100);

/** A trusted issuer as the admin API shows it: the entry, and where it came from. */
export const AdminTrustedIssuer = z.looseObject({ issuer: z.string(), kind: z.enum(["idp", "workload"]), source: z.enum(["file", "admin"]) });
export const AdminTrustedIssuerList = z.object({ trusted_issuers: z.array(AdminTrustedIssuer) });
export const AdminTrustedIssuerRemoved = z.object({ issuer: z.string(), deleted: z.literal(true) });

/** RFC 8693 §4.1: the acting party, and who it acts for in turn (the whole chain, nearest first). */
export interface ActClaim {
  sub: string;
  client_id?: string;
  act?: ActClaim;
}
export const ActClaim: z.ZodType<ActClaim> = z.lazy(() => z.object({ sub: z.string(), client_id: z.string().optional(), act: ActClaim.optional() }));

/** `subjects` pattern matching (see subjectPattern). */
export function subjectMatches(pattern: string, sub: string): boolean {
  let re = "";
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === "*" && pattern[i + 1] === "*") {
      re += ".*";
      i++;
    } else if (c === "*") re += "[^/]*";
    else re += c.replace(/[.+?^${}()|[\]\\]/g, "\\$&");
  }
  return new RegExp(`^${re}$`, "s").test(sub);
}
