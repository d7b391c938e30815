/**
 * The audit hash chain (DESIGN §20), as both sides see it: the gateway writes records and signs checkpoints with
 * these functions, the offline verifier (agent/audit-verify.ts) checks them with the same ones.
 *
 * A record is what an export line holds without its `hash`, and exactly that is hashed: `hash` = lower-case hex
 * SHA-256 of the record's RFC 8785 canonical JSON. The first record's `prev_hash` is 64 zeros. A checkpoint signs
 * `{seq, hash, time}` (JCS) with the gateway's Ed25519 audit key; its line is `{type:"checkpoint", seq, hash, time,
 * signature}`, `signature` base64url. An export starts with `{type:"key", jwk}` and ends with its closing line
 * `{type:"end", seq, hash, time, signature}`: the head the export was taken at, signed over the JCS of the line without
 * `signature` — its `type` member keeps an end's signature from ever passing for a checkpoint's, so an export cut
 * after any checkpoint lacks a closing line no one without the key can make.
 */
import { createHash, createPublicKey, verify as verifySignature } from "node:crypto";
import { canonicalize } from "./jcs.ts";

/** The first record's `prev_hash`. */
export const ZERO_HASH = "0".repeat(64);

/** One audit record in the chain: an export line without its `hash`. */
export interface ChainRecord {
  seq: number;
  prev_hash: string;
  /** The event type (`token.issued`, `proxy.call`, …): never "key" or "checkpoint", which name the other lines. */
  type: string;
  /** ISO 8601, milliseconds, UTC. */
  at: string;
  client_id: string | null;
  agent_id: string | null;
  user_id: string | null;
  provider_id: string | null;
  data: Record<string, unknown> | null;
  [extra: string]: unknown;
}

export interface ChainLine extends ChainRecord {
  hash: string;
}

/** What a checkpoint signs. `time` is ISO 8601: when it was signed. */
export interface CheckpointBody {
  seq: number;
  hash: string;
  time: string;
}

export interface CheckpointLine extends CheckpointBody {
  type: "checkpoint";
  /** base64url Ed25519 signature over canonicalize({seq, hash, time}). */
  signature: string;
}

/** The audit key's public half (RFC 8037 OKP), with its RFC 7638 thumbprint as `kid`. */
export interface AuditPublicJwk {
  kty: "OKP";
  crv: "Ed25519";
  x: string;
  kid: string;
}

/** The export's closing line: the head it was taken at (seq 0 and ZERO_HASH for an empty chain), signed then. */
export interface EndLine extends CheckpointBody {
  type: "end";
  /** base64url Ed25519 signature over canonicalize({type: "end", seq, hash, time}). */
  signature: string;
}

export interface KeyLine {
  type: "key";
  jwk: AuditPublicJwk;
}

/** The record as it is hashed and exported, from what the store keeps (times in epoch ms, data parsed). */
export function chainRecord(e: ChainedEvent & { seq: number; prev_hash: string; data?: Record<string, unknown> | null }): ChainRecord {
  return {
    seq: e.seq,
    prev_hash: e.prev_hash,
    type: e.type,
    at: new Date(e.at).toISOString(),
    client_id: e.client_id ?? null,
    agent_id: e.agent_id ?? null,
    user_id: e.user_id ?? null,
    provider_id: e.provider_id ?? null,
    data: e.data ?? null,
  };
}

/**
 * hashRecord(chainRecord(e)) for a record whose `data` is already canonical JSON text (or null), without building the
 * record object and sorting its members: its canonical text is written in the fixed order of the names chainRecord
 * gives it (UTF-16 order: agent_id, at, client_id, data, prev_hash, provider_id, seq, type, user_id). The store's
 * append path uses it; verification goes through the generic path, and a test holds the two byte-identical.
 */
export function hashChainedText(e: ChainedEvent, seq: number, prevHash: string, canonicalData: string | null): string {
  return Bun.SHA256.hash(canonicalRecordText(e, seq, prevHash, canonicalData), "hex");
}

/** An audit event as the chain reads it, besides its place in the chain and its data. */
export interface ChainedEvent {
  type: string;
  at: number;
  client_id?: string | null;
  agent_id?: string | null;
  user_id?: string | null;
  provider_id?: string | null;
}

/** The JCS text hashChainedText hashes (see there). */
export function canonicalRecordText(e: ChainedEvent, seq: number, prevHash: string, canonicalData: string | null): string {
  if (!Number.isFinite(seq)) throw new TypeError(`JCS: ${seq} is not a JSON number`);
  return (
    `{"agent_id":${textOrNull(e.agent_id)},"at":"${new Date(e.at).toISOString()}","client_id":${textOrNull(e.client_id)},` +
    `"data":${canonicalData ?? "null"},"prev_hash":${JSON.stringify(prevHash)},"provider_id":${textOrNull(e.provider_id)},` +
    `"seq":${JSON.stringify(seq)},"type":${JSON.stringify(e.type)},"user_id":${textOrNull(e.user_id)}}`
  );
}

export function hashRecord(record: ChainRecord): string {
  // Bun's one-shot SHA-256: a node:crypto hasher object per record costs 3–5× more (scripts/bench/audit.ts).
  return Bun.SHA256.hash(canonicalize(record), "hex");
}

export function checkpointMessage(c: CheckpointBody): Buffer {
  return Buffer.from(canonicalize({ seq: c.seq, hash: c.hash, time: c.time }), "utf8");
}

/** What an export's closing line signs: the line without its signature. */
export function endMessage(c: CheckpointBody): Buffer {
  return Buffer.from(canonicalize({ type: "end", seq: c.seq, hash: c.hash, time: c.time }), "utf8");
}

/** RFC 7638 thumbprint of an Ed25519 public key: base64url SHA-256 of `{"crv","kty","x"}` in that order. */
export function auditKeyId(x: string): string {
  return createHash("sha256").update(canonicalize({ crv: "Ed25519", kty: "OKP", x })).digest("base64url");
}

/** A checker of checkpoint signatures under one public key (`message`: endMessage for closing lines). */
export function checkpointVerifier(
  jwk: AuditPublicJwk,
  message: (c: CheckpointBody) => Buffer = checkpointMessage,
): (c: CheckpointBody & { signature: string }) => boolean {
  const key = createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x: jwk.x }, format: "jwk" });
  return (c) => {
    try {
      return verifySignature(null, message(c), key, Buffer.from(c.signature, "base64url"));
    } catch {
      return false;
    }
  };
}

export function isAuditPublicJwk(v: unknown): v is AuditPublicJwk {
  const o = v as Record<string, unknown> | null;
  return (
    typeof o === "object" && o !== null && o.kty === "OKP" && o.crv === "Ed25519" && typeof o.x === "string" &&
    /^[A-Za-z0-9_-]{43}$/.test(o.x) && typeof o.kid === "string"
  );
}

// internal

function textOrNull(v: string | null | undefined): string {
  return v === null || v === undefined ? "null" : canonicalize(v);
}
