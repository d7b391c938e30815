/**
 * The agent's ES256 (P-256) signing key: PEM generation and loading (PKCS#8 or SEC1), its public JWK,
 * RFC 7638 thumbprint and did:key, and the key file that is created once (0600) and reused. WebCrypto directly (what
 * jose's importPKCS8/exportJWK wrap): every command that reads the identity — `ath status` among them — then starts
 * without loading jose (DESIGN §13's start budget); signing (attestation.ts, loaded lazily) still uses jose.
 */
import type { JWK } from "jose";
import { didKeyFromJwk } from "../protocol/did-key.ts";
import { readIfExists } from "./files.ts";

export interface AgentKey {
  privateKey: CryptoKey;
  publicJwk: JWK;
  /** RFC 7638 SHA-256 thumbprint of `publicJwk`, base64url; the attestation's `kid`. */
  thumbprint: string;
  didKey: string;
}

/** A new ES256 private key as a PKCS#8 PEM ("-----BEGIN PRIVATE KEY-----"). */
export async function generateKeyPem(): Promise<string> {
  const { privateKey } = (await crypto.subtle.generateKey(ES256, true, ["sign", "verify"])) as CryptoKeyPair;
  return toPem(new Uint8Array(await crypto.subtle.exportKey("pkcs8", privateKey)), "PRIVATE KEY");
}

/**
 * Loads a P-256 private key from PEM: PKCS#8 ("PRIVATE KEY") or SEC1 ("EC PRIVATE KEY", as
 * `openssl ecparam -name prime256v1 -genkey` writes it). Anything else is an `Error` saying what was found.
 */
export async function loadKey(pem: string): Promise<AgentKey> {
  if (/ENCRYPTED/.test(pem)) throw new Error("agent key: encrypted PEM keys are not supported (store it unencrypted, 0600)");
  const pkcs8 = pemBlock(pem, "PRIVATE KEY");
  const sec1 = pkcs8 === undefined ? pemBlock(pem, "EC PRIVATE KEY") : undefined;
  if (pkcs8 === undefined && sec1 === undefined) {
    const label = /-----BEGIN ([A-Z0-9 ]+)-----/.exec(pem)?.[1];
    throw new Error(
      label === undefined
        ? "agent key: not a PEM file (expected -----BEGIN PRIVATE KEY----- or -----BEGIN EC PRIVATE KEY-----)"
        : `agent key: unsupported PEM type "${label}" (expected a P-256 "PRIVATE KEY" or "EC PRIVATE KEY")`,
    );
  }
  const der = (pkcs8 ?? sec1ToPkcs8(sec1 as Uint8Array)) as Uint8Array<ArrayBuffer>;
  let extractable: CryptoKey;
  let privateKey: CryptoKey;
  try {
    extractable = await crypto.subtle.importKey("pkcs8", der, ES256, true, ["sign"]);
    privateKey = await crypto.subtle.importKey("pkcs8", der, ES256, false, ["sign"]);
  } catch (cause) {
    throw new Error("agent key: not a valid P-256 (ES256) private key", { cause });
  }
  const { kty, crv, x, y } = (await crypto.subtle.exportKey("jwk", extractable)) as JsonWebKey;
  if (kty !== "EC" || crv !== "P-256" || x === undefined || y === undefined) {
    throw new Error("agent key: not a P-256 (ES256) private key");
  }
  const publicJwk: JWK = { kty, crv, x, y };
  return { privateKey, publicJwk, thumbprint: thumbprintOf(publicJwk), didKey: didKeyFromJwk(publicJwk) };
}

/** RFC 7638 §3.2: SHA-256 of the required members (crv, kty, x, y for EC) in lexicographic order, base64url. */
export function thumbprintOf(jwk: JWK): string {
  const canonical = JSON.stringify({ crv: jwk.crv, kty: jwk.kty, x: jwk.x, y: jwk.y });
  return Buffer.from(new Bun.CryptoHasher("sha256").update(canonical).digest()).toString("base64url");
}

/** ECDSA on P-256: the algorithm ES256 signs with (RFC 7518 §3.4). */
const ES256: EcKeyImportParams = { name: "ECDSA", namedCurve: "P-256" };

/**
 * Loads the key at `path`, or creates it (parent directories 0700, file 0600) when there is none.
 * An existing file is never overwritten, also when two processes race to create it.
 */
export async function loadOrCreateKey(path: string): Promise<{ key: AgentKey; created: boolean }> {
  const existing = await readIfExists(path);
  if (existing !== undefined) return { key: await loadKey(existing), created: false };
  // node:fs/promises and node:path only to create the key: reading it (every `ath status`) needs neither (DESIGN §13)
  const [{ link, mkdir, readFile, unlink, writeFile }, { dirname }] = await Promise.all([import("node:fs/promises"), import("node:path")]);
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  const pem = await generateKeyPem();
  // Write aside, then link(2) into place: link fails with EEXIST instead of replacing, and readers never
  // see a half-written key.
  const tmp = `${path}.${process.pid}.${crypto.randomUUID()}.tmp`;
  await writeFile(tmp, pem, { mode: 0o600, flag: "wx" });
  try {
    await link(tmp, path);
  } catch (err) {
    if (errorCode(err) !== "EEXIST") throw err;
    const winner = await readFile(path, "utf8");
    return { key: await loadKey(winner), created: false };
  } finally {
    await unlink(tmp).catch(() => undefined);
  }
  return { key: await loadKey(pem), created: true };
}

// internal

/** DER of prime256v1's AlgorithmIdentifier: SEQUENCE { id-ecPublicKey, prime256v1 } (RFC 5480 §2.1.1). */
const EC_P256_ALGORITHM = Uint8Array.of(
  0x30, 0x13,
  0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, // 1.2.840.10045.2.1 id-ecPublicKey
  0x06, 0x08, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, // 1.2.840.10045.3.1.7 prime256v1
);
const PRIME256V1_OID = EC_P256_ALGORITHM.slice(11);

/**
 * RFC 5208 PrivateKeyInfo ::= SEQUENCE { version 0, AlgorithmIdentifier, OCTET STRING (RFC 5915 ECPrivateKey) }.
 * The SEC1 structure goes in unchanged; its optional [0] curve parameters must name prime256v1.
 */
function sec1ToPkcs8(sec1: Uint8Array): Uint8Array {
  const outer = readTlv(sec1, 0);
  if (outer.tag !== 0x30 || outer.end !== sec1.length) throw new Error("agent key: malformed EC PRIVATE KEY");
  const version = readTlv(sec1, outer.start);
  const secret = readTlv(sec1, version.end);
  if (version.tag !== 0x02 || sec1[version.start] !== 1 || secret.tag !== 0x04) {
    throw new Error("agent key: malformed EC PRIVATE KEY");
  }
  if (secret.end < outer.end) {
    const next = readTlv(sec1, secret.end);
    if (next.tag === 0xa0 && !bytesEqual(sec1.subarray(next.start, next.end), PRIME256V1_OID)) {
      throw new Error("agent key: EC PRIVATE KEY is not on curve P-256 (prime256v1)");
    }
  }
  const body = concat(Uint8Array.of(0x02, 0x01, 0x00), EC_P256_ALGORITHM, derHeader(0x04, sec1.length), sec1);
  return concat(derHeader(0x30, body.length), body);
}

function readTlv(der: Uint8Array, at: number): { tag: number; start: number; end: number } {
  const tag = der[at];
  let len = der[at + 1];
  let start = at + 2;
  if (tag === undefined || len === undefined) throw new Error("agent key: malformed EC PRIVATE KEY");
  if (len & 0x80) {
    const n = len & 0x7f;
    if (n < 1 || n > 2) throw new Error("agent key: malformed EC PRIVATE KEY");
    len = 0;
    for (let i = 0; i < n; i++) len = (len << 8) | (der[start + i] ?? 0);
    start += n;
  }
  if (start + len > der.length) throw new Error("agent key: malformed EC PRIVATE KEY");
  return { tag, start, end: start + len };
}

function derHeader(tag: number, length: number): Uint8Array {
  if (length < 0x80) return Uint8Array.of(tag, length);
  if (length < 0x100) return Uint8Array.of(tag, 0x81, length);
  return Uint8Array.of(tag, 0x82, length >> 8, length & 0xff);
}

function pemBlock(pem: string, label: string): Uint8Array | undefined {
  const match = new RegExp(`-----BEGIN ${label}-----([A-Za-z0-9+/=\\s]+)-----END ${label}-----`).exec(pem);
  return match?.[1] === undefined ? undefined : new Uint8Array(Buffer.from(match[1].replace(/\s+/g, ""), "base64"));
}

function toPem(der: Uint8Array, label: string): string {
  const lines = Buffer.from(der).toString("base64").match(/.{1,64}/g) ?? [];
  return `-----BEGIN ${label}-----\n${lines.join("\n")}\n-----END ${label}-----\n`;
}

function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}

function errorCode(err: unknown): unknown {
  return typeof err === "object" && err !== null && "code" in err ? err.code : undefined;
}
