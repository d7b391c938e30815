/**
 * Where an agent's public key comes from (DESIGN §3 "Identity and attestation"): a `did:key` carries it in the
 * identifier; an `https://` agent_id names an agent identity document whose `public_key` holds it. Documents
 * are fetched defensively (https only, no private/loopback hosts, connected to the very address checked, 5 s, 64 KiB
 * as received with `Accept-Encoding: identity`, no unasked Content-Encoding, ≤ 3 redirects), at most 16 at once —
 * registration fetches them before any signature can be checked, so they are unauthenticated input and get a small
 * pool of their own (DESIGN §14) — and cached as their Cache-Control allows, at most 5 min.
 */
import { lookup as dnsLookup } from "node:dns/promises";
import { isIP } from "node:net";
import { importJWK, importSPKI } from "jose";
import { AthError } from "../../protocol/errors.ts";
import { AgentIdentityDocument } from "../../protocol/schemas.ts";
import { jwkFromDidKey } from "../../protocol/did-key.ts";
import type { Fetch, KeyResolver } from "../context.ts";
import { readBounded } from "../http/body.ts";
import { classifyAddress } from "./ip-address.ts";


export interface KeyResolverOptions {
  /** `ath serve --dev`: also allow http:// and loopback hosts. */
  dev: boolean;
  fetch?: Fetch;
  /** Clock in epoch ms. */
  now?: () => number;
  /** Host → all its addresses; defaults to `dns.lookup(host, {all: true})`. */
  lookup?: (host: string) => Promise<string[]>;
}

const IDENTITY_LIMITS = {
  cacheMs: 5 * 60_000,
  refreshIntervalMs: 60_000,
  timeoutMs: 5_000,
  maxBytes: 64 * 1024,
  maxRedirects: 3,
  maxCacheEntries: 1_000,
  /** Documents being fetched at once; one more is refused at once (503 SERVICE_UNAVAILABLE, Retry-After). */
  maxConcurrentFetches: 16,
} as const;

export function createKeyResolver(o: KeyResolverOptions): KeyResolver {
  const now = o.now ?? Date.now;
  const cache = new Map<string, { key: CryptoKey; fetchedAt: number; cacheMs: number }>();
  const lastFetch = new Map<string, number>();
  const inflight = new Map<string, Promise<CryptoKey>>();
  const env: FetchEnv = { dev: o.dev, fetch: o.fetch ?? fetch, lookup: o.lookup ?? defaultLookup };

  function load(agentId: string): Promise<CryptoKey> {
    const pending = inflight.get(agentId);
    if (pending) return pending;
    if (inflight.size >= IDENTITY_LIMITS.maxConcurrentFetches) {
      throw new AthError("SERVICE_UNAVAILABLE", "Too many agent identity documents are being fetched; retry shortly", { reason: "identity_fetch_busy" }, {
        headers: { "retry-after": "1" },
      });
    }
    lastFetch.delete(agentId);
    lastFetch.set(agentId, now());
    trim(lastFetch);
    const p = fetchDocumentKey(agentId, env)
      .then(({ key, cacheMs }) => {
        cache.delete(agentId);
        if (cacheMs > 0) cache.set(agentId, { key, fetchedAt: now(), cacheMs });
        trim(cache);
        return key;
      })
      .finally(() => inflight.delete(agentId));
    inflight.set(agentId, p);
    return p;
  }

  return {
    async get(agentId) {
      if (kindOf(agentId, o.dev) === "did:key") return didKeyToCryptoKey(agentId);
      const hit = cache.get(agentId);
      if (hit && now() - hit.fetchedAt < hit.cacheMs) return hit.key;
      return load(agentId);
    },
    async refresh(agentId) {
      if (kindOf(agentId, o.dev) === "did:key") return null; // the key is the identifier: nothing to re-fetch
      const last = lastFetch.get(agentId);
      if (last !== undefined && now() - last < IDENTITY_LIMITS.refreshIntervalMs) return null;
      return load(agentId);
    },
  };
}

// internal

interface FetchEnv {
  dev: boolean;
  fetch: Fetch;
  lookup: (host: string) => Promise<string[]>;
}

/** A reason the document or its key could not be had; becomes the AthError message. */
class Refusal extends Error {}

const SUPPORTED = "supported agent_ids are https:// URLs of an agent identity document and did:key:z… (P-256)";

function kindOf(agentId: string, dev: boolean): "did:key" | "url" {
  if (agentId.startsWith("did:key:")) return "did:key";
  if (agentId.startsWith("https://") || (dev && agentId.startsWith("http://"))) return "url";
  const hint = agentId.startsWith("http://") ? " (http:// only with ath serve --dev)" : "";
  throw new AthError("INVALID_ATTESTATION", `unsupported agent_id ${show(agentId)}: ${SUPPORTED}${hint}`);
}

async function didKeyToCryptoKey(agentId: string): Promise<CryptoKey> {
  // The identity is the bare DID: with a fragment or path, one key would stand for endlessly many agent_ids.
  if (!/^did:key:z[1-9A-HJ-NP-Za-km-z]+$/.test(agentId)) {
    throw new AthError("INVALID_ATTESTATION", `agent_id ${show(agentId)} is not a bare did:key (no fragment, query or path)`);
  }
  try {
    return (await importJWK(jwkFromDidKey(agentId), "ES256")) as CryptoKey;
  } catch (err) {
    const why = err instanceof TypeError ? err.message : "not a P-256 key";
    throw new AthError("INVALID_ATTESTATION", `agent_id ${show(agentId)} is not a valid did:key: ${why}`);
  }
}

async function fetchDocumentKey(agentId: string, env: FetchEnv): Promise<{ key: CryptoKey; cacheMs: number }> {
  try {
    const { text, cacheMs } = await fetchDocument(agentId, env);
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw new Refusal("the identity document is not JSON");
    }
    const doc = AgentIdentityDocument.safeParse(json);
    if (!doc.success) throw new Refusal("the identity document does not match the AgentIdentityDocument schema");
    if (doc.data.agent_id !== agentId) throw new Refusal(`the identity document is for ${show(doc.data.agent_id)}`);
    return { key: await importPublicKey(doc.data.public_key), cacheMs };
  } catch (err) {
    const why = err instanceof Refusal ? err.message : "the identity document could not be fetched";
    throw new AthError("INVALID_ATTESTATION", `cannot get the public key of ${show(agentId)}: ${why}`, undefined, {
      cause: err,
    });
  }
}

async function fetchDocument(agentId: string, env: FetchEnv): Promise<{ text: string; cacheMs: number; cacheControl: string | null }> {
  // One deadline for the whole fetch — DNS lookups, redirects and the body included. The lookups cannot be aborted,
  // so each step races the deadline.
  const signal = AbortSignal.timeout(IDENTITY_LIMITS.timeoutMs);
  const deadline = new Promise<never>((_, reject) => signal.addEventListener("abort", () => reject(new Refusal("timed out after 5 s"))));
  deadline.catch(() => undefined);
  try {
    let url = new URL(agentId);
    for (let hop = 0; ; hop++) {
      const address = await Promise.race([checkTarget(url, env), deadline]);
      const res = await Promise.race([env.fetch(pinned(url, address), pinnedInit(url, signal)), deadline]);
      const location = res.headers.get("location");
      if (res.status >= 300 && res.status < 400 && location !== null) {
        await res.body?.cancel();
        if (hop >= IDENTITY_LIMITS.maxRedirects) throw new Refusal("too many redirects");
        url = new URL(location, url);
        continue;
      }
      if (res.status !== 200) {
        await res.body?.cancel();
        throw new Refusal(`the identity document answered HTTP ${res.status}`);
      }
      // Asked for `identity`: a compressed body (a gzip bomb costs a few KiB to send, 1000× that to inflate) is refused.
      const encoding = res.headers.get("content-encoding");
      if (encoding !== null && encoding.trim().toLowerCase() !== "identity") {
        await res.body?.cancel();
        throw new Refusal(`the identity document came with Content-Encoding ${show(encoding)}, which was not asked for`);
      }
      const cacheControl = res.headers.get("cache-control");
      return { text: await Promise.race([readCapped(res), deadline]), cacheMs: cacheLifetime(cacheControl), cacheControl };
    }
  } catch (err) {
    if (signal.aborted) throw new Refusal("timed out after 5 s");
    throw err;
  }
}

/**
 * The URL actually fetched: the checked address in place of the host name, so the connection goes where the check
 * looked (no second DNS lookup: rebinding-safe, DESIGN §14). The name still travels as `Host` and, over https, as
 * the TLS server name — which the certificate is verified against (Bun's fetch: `tls.serverName`).
 */
function pinned(url: URL, address: string): URL {
  const to = new URL(url);
  to.hostname = address.includes(":") ? `[${address}]` : address;
  return to;
}

/**
 * The request: `Accept-Encoding: identity` and no decompression (`decompress: false`), so the 64 KiB cap counts the
 * bytes as received; the name as `Host` and TLS server name (see `pinned`).
 */
function pinnedInit(url: URL, signal: AbortSignal): RequestInit {
  const name = url.hostname.replace(/^\[|\]$/g, "");
  const init: RequestInit & { decompress?: boolean; tls?: { serverName?: string } } = {
    redirect: "manual",
    signal,
    decompress: false,
    headers: { accept: "application/json", "accept-encoding": "identity", host: url.host },
  };
  if (url.protocol === "https:" && !isIP(name)) init.tls = { serverName: name };
  return init;
}

/**
 * https only (http in dev), no credentials, and every address of the host public (loopback too in dev); the address
 * to connect to — the first IPv4 one, else the first — is returned, and only it is used.
 */
async function checkTarget(url: URL, env: FetchEnv): Promise<string> {
  if (!(url.protocol === "https:" || (env.dev && url.protocol === "http:"))) {
    throw new Refusal(`${url.protocol}// is not allowed (https:// only${env.dev ? ", or http:// in dev" : ""})`);
  }
  if (url.username || url.password) throw new Refusal("URLs with credentials are not allowed");
  const host = url.hostname.replace(/^\[|\]$/g, "");
  // One lookup: the connection goes to an address checked here (pinned), never to a second answer.
  let addresses: string[];
  try {
    addresses = isIP(host) ? [host] : await env.lookup(host);
  } catch {
    throw new Refusal(`host ${host} does not resolve`);
  }
  if (addresses.length === 0) throw new Refusal(`host ${host} does not resolve`);
  for (const address of addresses) {
    const kind = classifyAddress(address);
    if (kind === "public" || (kind === "loopback" && env.dev)) continue;
    throw new Refusal(`host ${host} is or resolves to a ${kind} address, which is not allowed`);
  }
  return addresses.find((a) => isIP(a) === 4) ?? addresses[0]!;
}

/** How long a document may be cached: `no-store`/`no-cache` not at all, `max-age` up to 5 min, else 5 min. */
export function cacheLifetime(cacheControl: string | null): number {
  const directives = (cacheControl ?? "").toLowerCase().split(",").map((d) => d.trim());
  if (directives.some((d) => d === "no-store" || d === "no-cache")) return 0;
  const maxAge = directives.map((d) => /^max-age=(\d+)$/.exec(d)?.[1]).find((v) => v !== undefined);
  return maxAge === undefined ? IDENTITY_LIMITS.cacheMs : Math.min(Number(maxAge) * 1000, IDENTITY_LIMITS.cacheMs);
}

async function readCapped(res: Response): Promise<string> {
  const tooLarge = () => new Refusal("the identity document is larger than 64 KiB");
  return new TextDecoder().decode(await readBounded(res.body, res.headers.get("content-length"), IDENTITY_LIMITS.maxBytes, tooLarge));
}

/** `public_key`: a P-256 public JWK or an SPKI PEM ("-----BEGIN PUBLIC KEY-----"). */
async function importPublicKey(pk: string | Record<string, unknown>): Promise<CryptoKey> {
  let key: CryptoKey;
  if (typeof pk === "string") {
    if (!pk.includes("-----BEGIN PUBLIC KEY-----")) throw new Refusal("public_key is not an SPKI PEM or a JWK");
    key = await importSPKI(pk.trim(), "ES256").catch(() => {
      throw new Refusal("public_key is not a P-256 public key");
    });
  } else {
    if ("d" in pk) throw new Refusal("public_key contains private key material");
    const { kty, crv, x, y } = pk;
    if (kty !== "EC" || crv !== "P-256" || typeof x !== "string" || typeof y !== "string") {
      throw new Refusal("public_key is not a P-256 EC JWK");
    }
    key = (await importJWK({ kty, crv, x, y }, "ES256").catch(() => {
      throw new Refusal("public_key is not a valid P-256 point");
    })) as CryptoKey;
  }
  const algorithm = key.algorithm as EcKeyAlgorithm;
  if (key.type !== "public" || algorithm.namedCurve !== "P-256") throw new Refusal("public_key is not a P-256 public key");
  return key;
}

async function defaultLookup(host: string): Promise<string[]> {
  const records = await dnsLookup(host, { all: true, verbatim: true });
  return records.map((r) => r.address);
}

function trim(map: Map<string, unknown>): void {
  // Maps iterate in insertion order: the first key is the oldest.
  while (map.size > IDENTITY_LIMITS.maxCacheEntries) map.delete(map.keys().next().value as string);
}

/** An untrusted identifier, quoted and bounded, for error messages. */
function show(value: string): string {
  return JSON.stringify(value.length > 200 ? `${value.slice(0, 200)}…` : value);
}

/**
 * A public JSON document fetched the way agent identity documents are — https only (http and loopback under `--dev`),
 * no private hosts, 5 s, 64 KiB, ≤ 3 redirects: MCP client ID metadata documents (DESIGN §18) and trusted issuers'
 * JWKS (§23, which keep their own cache rule: `cacheControl` is the header as received) are fetched with it.
 * Throws an Error whose message says why it could not be had.
 */
export function fetchPublicDocument(url: string, o: { dev: boolean; fetch: Fetch }): Promise<{ text: string; cacheMs: number; cacheControl: string | null }> {
  return fetchDocument(url, { dev: o.dev, fetch: o.fetch, lookup: defaultLookup });
}
