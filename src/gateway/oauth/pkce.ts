/** PKCE (RFC 7636) with S256 only: the gateway creates the verifier, the provider checks the challenge. */
import { randomSecret } from "../crypto/secrets.ts";

/** RFC 7636 §4.2: code_challenge = BASE64URL(SHA256(ASCII(code_verifier))). */
export function s256(verifier: string): string {
  return new Bun.CryptoHasher("sha256").update(verifier).digest("base64url");
}

/** RFC 7636 §4.1: 43–128 chars of unreserved characters; 32 random bytes give 43. */
export function createPkce(): { verifier: string; challenge: string; method: "S256" } {
  const verifier = randomSecret(32);
  return { verifier, challenge: s256(verifier), method: "S256" };
}
