/**
 * Trusted issuers' keys (DESIGN §23): an inline `jwks`, or a `jwks_uri` fetched the way identity documents are
 * (identity/agent-keys.ts `fetchPublicDocument`: https only — http and loopback under `--dev` —, no private hosts, 5 s,
 * 64 KiB), cached as its Cache-Control allows but at most 1 h (at least a minute: an issuer asking for no caching is
 * not fetched on every assertion), one fetch at a time per URI. A JWT whose `kid` the cached set lacks refetches it —
 * the issuer may have rotated — at most once a minute per URI; a failed fetch is not retried for 5 s.
 */
import { compactVerify, createLocalJWKSet, errors, type JSONWebKeySet } from "jose";
import { IDENTITY_LIMITS } from "../../protocol/identity.ts";
import type { Fetch } from "../context.ts";
import { fetchPublicDocument } from "./agent-keys.ts";

/** Where an issuer's keys are: one of the two. */
export interface JwksSource {
  jwks_uri?: string | undefined;
  jwks?: JSONWebKeySet | undefined;
}

/** The keys could not be had (the message says why); or no key of the set verifies the JWT. */
export class JwksError extends Error {
  override readonly name = "JwksError";
}

export interface JwksCache {
  /** The JWS's payload once its signature verifies with one of the issuer's keys; throws JwksError or jose's errors. */
  verify(jws: string, source: JwksSource, algorithms: string[]): Promise<Uint8Array>;
}

export function createJwksCache(o: { dev: boolean; fetch: Fetch; now: () => number }): JwksCache {
  const entries = new Map<string, Entry>();
  /** When each URI was last refetched for an unknown kid (the cache's own fills are not counted against it). */
  const lastRefetch = new Map<string, number>();
  const failedAt = new Map<string, number>();
  const inflight = new Map<string, Promise<Entry>>();

  function load(uri: string): Promise<Entry> {
    const running = inflight.get(uri);
    if (running) return running;
    const failed = failedAt.get(uri);
    if (failed !== undefined && o.now() - failed < RETRY_AFTER_FAILURE_MS) return Promise.reject(new JwksError("the issuer's JWKS could not be fetched a moment ago"));
    const p = fetchJwks(uri, o)
      .then((entry) => {
        entries.delete(uri);
        entries.set(uri, entry);
        failedAt.delete(uri);
        while (entries.size > MAX_ENTRIES) entries.delete(entries.keys().next().value as string);
        return entry;
      })
      .catch((err: unknown) => {
        failedAt.set(uri, o.now());
        throw err;
      })
      .finally(() => inflight.delete(uri));
    inflight.set(uri, p);
    return p;
  }

  return {
    async verify(jws, source, algorithms) {
      if (source.jwks) return (await compactVerify(jws, createLocalJWKSet(source.jwks), { algorithms })).payload;
      const uri = source.jwks_uri;
      if (uri === undefined) throw new TypeError("a trusted issuer without jwks_uri or jwks");
      const cached = entries.get(uri);
      const entry = cached && o.now() - cached.fetchedAt < cached.ttlMs ? cached : await load(uri);
      try {
        return (await compactVerify(jws, entry.keys, { algorithms })).payload;
      } catch (err) {
        if (!(err instanceof errors.JWKSNoMatchingKey)) throw err;
        // an unknown kid: the issuer may have rotated its keys — refetch, at most once a minute
        const last = lastRefetch.get(uri);
        if (last !== undefined && o.now() - last < IDENTITY_LIMITS.jwksRefetchIntervalMs) throw err;
        lastRefetch.set(uri, o.now());
        while (lastRefetch.size > MAX_ENTRIES) lastRefetch.delete(lastRefetch.keys().next().value as string);
        return (await compactVerify(jws, (await load(uri)).keys, { algorithms })).payload;
      }
    },
  };
}

// internal

interface Entry {
  keys: ReturnType<typeof createLocalJWKSet>;
  fetchedAt: number;
  ttlMs: number;
}

const RETRY_AFTER_FAILURE_MS = 5_000;
const MAX_ENTRIES = 1_000;

async function fetchJwks(uri: string, o: { dev: boolean; fetch: Fetch; now: () => number }): Promise<Entry> {
  let text: string;
  let cacheControl: string | null;
  try {
    ({ text, cacheControl } = await fetchPublicDocument(uri, { dev: o.dev, fetch: o.fetch }));
  } catch (err) {
    throw new JwksError(`the issuer's JWKS could not be fetched: ${err instanceof Error ? err.message : "unknown error"}`);
  }
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    throw new JwksError("the issuer's JWKS is not JSON");
  }
  const keys = (doc as { keys?: unknown } | null)?.keys;
  if (!Array.isArray(keys) || keys.some((k) => k === null || typeof k !== "object" || Array.isArray(k))) throw new JwksError("the issuer's JWKS has no keys array");
  // public keys only: a set holding private or symmetric material is not used at all
  if (keys.some((k) => "d" in k || "k" in k)) throw new JwksError("the issuer's JWKS holds private or symmetric key material");
  return { keys: createLocalJWKSet({ keys } as JSONWebKeySet), fetchedAt: o.now(), ttlMs: jwksLifetime(cacheControl) };
}

/** How long a JWKS is kept: its `max-age` within [1 min, 1 h]; 1 min for no-store/no-cache; 1 h when it does not say. */
export function jwksLifetime(cacheControl: string | null): number {
  const directives = (cacheControl ?? "").toLowerCase().split(",").map((d) => d.trim());
  const floor = IDENTITY_LIMITS.jwksRefetchIntervalMs;
  if (directives.some((d) => d === "no-store" || d === "no-cache")) return floor;
  const maxAge = directives.map((d) => /^max-age=(\d+)$/.exec(d)?.[1]).find((v) => v !== undefined);
  if (maxAge === undefined) return IDENTITY_LIMITS.jwksMaxCacheMs;
  return Math.max(floor, Math.min(Number(maxAge) * 1000, IDENTITY_LIMITS.jwksMaxCacheMs));
}
