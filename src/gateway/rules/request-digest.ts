/**
 * The digest an approval is bound to (DESIGN §16, superseding §15's): base64url SHA-256 over the method, the literal
 * path, the query exactly as sent (order kept), the bound headers as sorted lower-case `name: value` lines, and the
 * body bytes — each part length-prefixed so no two different requests share an input.
 */
import { boundHeaderLines, type CanonicalWithContent } from "./canonical-request.ts";

export function requestDigest(r: CanonicalWithContent): string {
  const head = [r.method.toUpperCase(), r.literal, r.query, boundHeaderLines(r.headers)].map((part) => `${part.length}:${part}\n`).join("");
  const hasher = new Bun.CryptoHasher("sha256");
  hasher.update(head);
  hasher.update(`${r.body.byteLength}:`);
  hasher.update(r.body);
  return hasher.digest("base64url");
}
