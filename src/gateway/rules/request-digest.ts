/**
 * The digest an approval is bound to (DESIGN §15): base64url SHA-256 over the method, the upstream path as sent, the
 * query's `name=value` pairs sorted (as sent: encoding is part of the request) and the body bytes, each part
 * length-prefixed so no two different requests share an input.
 */
export function requestDigest(method: string, path: string, query: string, body: Uint8Array): string {
  const pairs = query.replace(/^\?/, "").split("&").filter((p) => p !== "").sort();
  const head = [method.toUpperCase(), path, pairs.join("&")].map((part) => `${part.length}:${part}\n`).join("");
  const hasher = new Bun.CryptoHasher("sha256");
  hasher.update(head);
  hasher.update(`${body.byteLength}:`);
  hasher.update(body);
  return hasher.digest("base64url");
}
