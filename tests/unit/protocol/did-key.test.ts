import { describe, expect, test } from "bun:test";
import { exportJWK, generateKeyPair } from "jose";
import { base58btcDecode, base58btcEncode, didKeyFromJwk, jwkFromDidKey } from "../../../src/protocol/did-key.ts";

// did:key method spec test vectors (w3c-ccg did-method-key, P-256).
const VECTORS = [
  {
    did: "did:key:zDnaerDaTF5BXEavCrfRZEk316dpbLsfPDZ3WJ5hRTPFU2169",
    x: "fyNYMN0976ci7xqiSdag3buk-ZCwgXU4kz9XNkBlNUI",
    y: "hW2ojTNfH7Jbi8--CJUo3OCbH3y5n91g-IMA9MLMbTU",
  },
  {
    did: "did:key:zDnaerx9CtbPJ1q36T5Ln5wYt3MQYeGRG5ehnPAmxcf5mDZpv",
    x: "igrFmi0whuihKnj9R3Om1SoMph72wUGeFaBbzG2vzns",
    y: "efsX5b10x8yjyrj4ny3pGfLcY7Xby1KzgqOdqnsrJIM",
  },
];

describe("did:key (P-256, multicodec 0x1200, base58btc)", () => {
  test("the spec's P-256 vectors decode to their JWK and encode back", () => {
    for (const v of VECTORS) {
      expect(jwkFromDidKey(v.did)).toEqual({ kty: "EC", crv: "P-256", x: v.x, y: v.y });
      expect(didKeyFromJwk({ kty: "EC", crv: "P-256", x: v.x, y: v.y })).toBe(v.did);
    }
  });

  test("a key's did:key round-trips to the same public key, for both parities of y", async () => {
    const parities = new Set<number>();
    for (let i = 0; i < 64 && parities.size < 2; i++) {
      const { publicKey } = await generateKeyPair("ES256", { extractable: true });
      const { kty, crv, x, y } = await exportJWK(publicKey);
      const did = didKeyFromJwk({ kty, crv, x, y });
      expect(did).toStartWith("did:key:zDn");
      parities.add(base58btcDecode(did.slice("did:key:z".length))[2]!);
      expect(jwkFromDidKey(did)).toEqual({ kty: "EC", crv: "P-256", x, y });
    }
    expect([...parities].sort()).toEqual([0x02, 0x03]);
  });

  test("a fragment naming the key is ignored", () => {
    const v = VECTORS[0]!;
    expect(jwkFromDidKey(`${v.did}#${v.did.slice(8)}`).x).toBe(v.x);
  });

  test("malformed or non-P-256 did:keys throw TypeError", () => {
    const bad = [
      "",
      "did:web:example.com",
      "did:key:",
      "did:key:z",
      "did:key:Dnaer", // no z multibase prefix
      "did:key:z0OIl", // not base58btc
      "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK", // Ed25519
      "did:key:z82Lm1MpAkeJcix9K8TMiLd5NMAhnwkjjCBeWHXyu3U4oT2MVJJKXkcVBgjGhnLBn2Kaau9", // P-384
      VECTORS[0]!.did.slice(0, -1), // truncated
      `did:key:z${base58btcEncode(Uint8Array.of(0x80, 0x24, 0x04, ...new Uint8Array(32)))}`, // bad point prefix
      `did:key:z${base58btcEncode(Uint8Array.of(0x80, 0x24, 0x02, ...new Uint8Array(32).fill(0xff)))}`, // x ≥ p
    ];
    for (const did of bad) expect(() => jwkFromDidKey(did)).toThrow(TypeError);
  });

  test("only P-256 EC JWKs with an on-curve point become a did:key", () => {
    const v = VECTORS[0]!;
    const bad = [
      { kty: "OKP", crv: "Ed25519", x: v.x },
      { kty: "EC", crv: "P-384", x: v.x, y: v.y },
      { kty: "EC", crv: "P-256", x: v.x },
      { kty: "EC", crv: "P-256", x: v.x, y: VECTORS[1]!.y }, // not on the curve
      { kty: "EC", crv: "P-256", x: "AAAA", y: v.y },
    ];
    for (const jwk of bad) expect(() => didKeyFromJwk(jwk)).toThrow(TypeError);
  });

  test("base58btc keeps leading zero bytes as leading 1s", () => {
    const bytes = Uint8Array.of(0, 0, 1, 2, 255);
    const text = base58btcEncode(bytes);
    expect(text).toStartWith("11");
    expect(base58btcDecode(text)).toEqual(bytes);
    expect(base58btcEncode(new TextEncoder().encode("Hello World!"))).toBe("2NEpo7TZRRrLZSi2U");
  });

  test("base58btc encodes as the plain BigInt conversion does (random bytes, leading zeros, all-0xff)", () => {
    const ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";
    const reference = (bytes: Uint8Array) => {
      let n = 0n;
      for (const b of bytes) n = (n << 8n) | BigInt(b);
      let out = "";
      for (; n > 0n; n /= 58n) out = ALPHABET[Number(n % 58n)] + out;
      for (const b of bytes) {
        if (b !== 0) break;
        out = `1${out}`;
      }
      return out;
    };
    for (let k = 0; k < 2000; k++) {
      const bytes = crypto.getRandomValues(new Uint8Array(k % 40));
      if (k % 3 === 0) bytes.fill(0, 0, k % 4);
      if (k % 7 === 0) bytes.fill(k % 2 ? 0 : 255);
      expect(base58btcEncode(bytes)).toBe(reference(bytes));
    }
  });
});
