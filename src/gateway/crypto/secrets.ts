/** Random identifiers and secrets, their hashes, and constant-time comparison. */
import { timingSafeEqual } from "node:crypto";

/** 256 bits (by default) from the CSPRNG, base64url without padding. */
export function randomSecret(bytes = 32): string {
  return Buffer.from(crypto.getRandomValues(new Uint8Array(bytes))).toString("base64url");
}

/** `prefix` + 256-bit random: client secrets, tokens, codes, session ids. */
export function mintSecret(prefix: string, bytes = 32): string {
  return prefix + randomSecret(bytes);
}

/**
 * Hex SHA-256 of a high-entropy secret. Every secret ath mints carries ≥ 128 bits, so a fast hash is the
 * right lookup key (a password hash would add nothing but latency).
 */
export function hashSecret(secret: string): string {
  // The one-shot form: a hasher object per call costs 8× more, on every proxied request.
  return Bun.SHA256.hash(secret, "hex");
}

/** Compares two strings in time independent of where they differ (lengths are hashed first). */
export function constantTimeEqual(a: string, b: string): boolean {
  const ha = Bun.SHA256.hash(a) as Uint8Array;
  const hb = Bun.SHA256.hash(b) as Uint8Array;
  return timingSafeEqual(ha, hb) && a.length === b.length;
}
