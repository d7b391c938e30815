/**
 * Trusted issuers (DESIGN §23): the identity providers whose ID-JAGs ath honours (`kind: idp`) and the workload
 * issuers whose JWTs register and authenticate agents (`kind: workload`) — from the providers file (upserted at every
 * start) and the admin API — and the one way a JWT of theirs is verified: its `iss` found among them (else
 * `issuer_untrusted`), of the kind the use asks for, its signature checked with the issuer's keys (identity/jwks.ts,
 * one cache per gateway). Claims are the caller's (identity/id-jag.ts, identity/workload-jwt.ts).
 */
import type { TrustedIssuer } from "../../protocol/identity.ts";
import type { TrustedIssuerRecord } from "../../store/identity-types.ts";
import type { Gateway } from "../context.ts";
import { AssertionError, peekClaims, verifyIssuerJwt } from "../identity/issuer-jwt.ts";
import { createJwksCache, type JwksCache } from "../identity/jwks.ts";

export function listIssuers(gw: Gateway): Promise<TrustedIssuerRecord[]> {
  return gw.store.listTrustedIssuers();
}

export function findIssuer(gw: Gateway, issuer: string): Promise<TrustedIssuerRecord | null> {
  if (issuer.length > 2048 || issuer.includes("\0")) return Promise.resolve(null);
  return gw.store.getTrustedIssuer(issuer);
}

/** Adds or replaces an issuer; `source` "file" for the providers file's entries. */
export async function putIssuer(gw: Gateway, config: TrustedIssuer, source: TrustedIssuerRecord["source"]): Promise<TrustedIssuerRecord> {
  const record: TrustedIssuerRecord = { issuer: config.issuer, config, source, updated_at: gw.now() };
  await gw.store.upsertTrustedIssuer(record);
  return record;
}

/** Removes an issuer; false when there was none. */
export function removeIssuer(gw: Gateway, issuer: string): Promise<boolean> {
  return gw.store.deleteTrustedIssuer(issuer);
}

/** What a verified JWT of a trusted issuer is: the issuer's entry and the (still unchecked) claims. */
export interface IssuedJwt {
  issuer: TrustedIssuer;
  claims: Record<string, unknown>;
}

/**
 * The JWT's issuer, trusted and of `kind`, and its signature verified — else AssertionError (`issuer_untrusted`
 * when its `iss` is no trusted issuer of that kind, `assertion_invalid` for the rest).
 */
export async function verifyFromIssuer(gw: Gateway, jwt: string, kind: TrustedIssuer["kind"], typ?: string): Promise<IssuedJwt> {
  const peeked = peekClaims(jwt);
  if (!peeked) throw new AssertionError("assertion_invalid", "the assertion is not a compact JWS with a JSON payload");
  const iss = typeof peeked.iss === "string" ? peeked.iss : "";
  const record = iss ? await findIssuer(gw, iss) : null;
  if (!record || record.config.kind !== kind) {
    throw new AssertionError("issuer_untrusted", `the issuer ${JSON.stringify(iss.slice(0, 200))} is not a trusted ${kind === "idp" ? "identity provider" : "workload issuer"} of this gateway`);
  }
  const claims = await verifyIssuerJwt(jwt, record.config, { ...(typ ? { typ } : {}), jwks: jwksOf(gw) });
  // the signed claims must name the issuer whose keys verified them
  if (claims.iss !== record.issuer) throw new AssertionError("assertion_invalid", "the assertion's iss changed under its signature");
  return { issuer: record.config, claims };
}

/**
 * Whether `jwt` claims to come from a trusted workload issuer (how registration tells a workload JWT from an
 * attestation, whose `iss` is the agent_id itself or its origin: those cost no store read).
 */
export async function isWorkloadJwt(gw: Gateway, jwt: string, agentId: string): Promise<boolean> {
  const iss = peekClaims(jwt)?.iss;
  if (typeof iss !== "string" || iss === agentId || (URL.canParse(agentId) && /^https?:/.test(agentId) && iss === new URL(agentId).origin)) return false;
  return (await findIssuer(gw, iss))?.config.kind === "workload";
}

// internal

const caches = new WeakMap<Gateway, JwksCache>();

function jwksOf(gw: Gateway): JwksCache {
  let cache = caches.get(gw);
  if (!cache) caches.set(gw, (cache = createJwksCache({ dev: gw.opts.dev, fetch: gw.fetch, now: gw.now })));
  return cache;
}
