/**
 * did:key for P-256 public keys (https://w3c-ccg.github.io/did-method-key/): multicodec `p256-pub` (0x1200),
 * the 33-byte SEC1 compressed point, base58btc with the `z` multibase prefix. The identifier carries the key,
 * so a local agent needs no web host to be verifiable.
 */
import type { JWK } from "jose";

/**
 * The did:key of a P-256 public JWK.
 * @example didKeyFromJwk({ kty: "EC", crv: "P-256", x: "…", y: "…" }) // "did:key:zDn…"
 */
export function didKeyFromJwk(jwk: JWK): string {
  if (jwk.kty !== "EC" || jwk.crv !== "P-256") throw new TypeError("did:key: only P-256 EC keys are supported");
  const x = decodeCoordinate(jwk.x, "x");
  const y = decodeCoordinate(jwk.y, "y");
  const xn = toBigInt(x);
  const yn = toBigInt(y);
  if (xn >= P || yn >= P || mod(yn * yn) !== curveRhs(xn)) throw new TypeError("did:key: the point is not on P-256");
  const bytes = new Uint8Array(2 + 33);
  bytes.set(P256_PUB_MULTICODEC, 0);
  bytes[2] = (yn & 1n) === 1n ? 0x03 : 0x02;
  bytes.set(x, 3);
  return `did:key:z${base58btcEncode(bytes)}`;
}

/**
 * The public JWK inside a P-256 did:key (y is recomputed from the compressed point).
 * Throws `TypeError` for anything that is not a well-formed P-256 did:key.
 */
export function jwkFromDidKey(did: string): JWK {
  if (typeof did !== "string" || !did.startsWith("did:key:z")) {
    throw new TypeError("did:key: expected did:key:z… (base58btc)");
  }
  // A DID URL may carry a fragment naming the key itself (did:key:z…#z…); the key is the identifier part.
  const id = did.slice("did:key:z".length).split("#")[0] ?? "";
  const bytes = base58btcDecode(id);
  if (bytes.length !== 35 || bytes[0] !== P256_PUB_MULTICODEC[0] || bytes[1] !== P256_PUB_MULTICODEC[1]) {
    throw new TypeError("did:key: not a P-256 public key (multicodec 0x1200, 33-byte compressed point)");
  }
  const prefix = bytes[2];
  if (prefix !== 0x02 && prefix !== 0x03) throw new TypeError("did:key: not a compressed P-256 point");
  const x = bytes.slice(3);
  const xn = toBigInt(x);
  if (xn >= P) throw new TypeError("did:key: the point is not on P-256");
  const rhs = curveRhs(xn);
  // P ≡ 3 (mod 4), so a square root of a is a^((P+1)/4) when one exists.
  let yn = modPow(rhs, (P + 1n) / 4n);
  if (mod(yn * yn) !== rhs) throw new TypeError("did:key: the point is not on P-256");
  if ((yn & 1n) !== BigInt(prefix & 1)) yn = P - yn;
  return { kty: "EC", crv: "P-256", x: Buffer.from(x).toString("base64url"), y: Buffer.from(fromBigInt(yn)).toString("base64url") };
}

/**
 * Bitcoin's base58 alphabet, as multibase `z` uses it. Base 256 → base 58 on small integers with index loops: the
 * agent names its did:key at every start (`ath status`), and BigInt division or a typed array's iterator cost a cold
 * process ≈ 1 ms there (DESIGN §13).
 */
export function base58btcEncode(bytes: Uint8Array): string {
  const digits: number[] = []; // base 58, least significant first
  for (let i = 0; i < bytes.length; i++) {
    let carry = bytes[i] as number;
    for (let j = 0; j < digits.length; j++) {
      carry += (digits[j] as number) * 256;
      digits[j] = carry % 58;
      carry = (carry - (digits[j] as number)) / 58;
    }
    for (; carry > 0; carry = (carry - (carry % 58)) / 58) digits.push(carry % 58);
  }
  let out = "";
  for (let i = 0; i < bytes.length && bytes[i] === 0; i++) out += "1"; // each leading zero byte is one leading '1'
  for (let j = digits.length - 1; j >= 0; j--) out += ALPHABET[digits[j] as number];
  return out;
}

export function base58btcDecode(text: string): Uint8Array {
  if (text.length === 0) throw new TypeError("base58btc: empty input");
  let n = 0n;
  for (const ch of text) {
    const digit = ALPHABET.indexOf(ch);
    if (digit < 0) throw new TypeError("base58btc: invalid character");
    n = n * 58n + BigInt(digit);
  }
  let zeros = 0;
  while (zeros < text.length && text[zeros] === "1") zeros++;
  const body = n === 0n ? new Uint8Array(0) : hexToBytes(n.toString(16));
  const out = new Uint8Array(zeros + body.length);
  out.set(body, zeros);
  return out;
}

// internal

const ALPHABET = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";
/** Multicodec p256-pub = 0x1200, as an unsigned varint. */
const P256_PUB_MULTICODEC = Uint8Array.of(0x80, 0x24);
/** P-256 (FIPS 186-4 D.1.2.3): y² = x³ − 3x + b over GF(P). */
const P = 0xffffffff00000001000000000000000000000000ffffffffffffffffffffffffn;
const B = 0x5ac635d8aa3a93e7b3ebbd55769886bc651d06b0cc53b0f63bce3c3e27d2604bn;

function mod(a: bigint): bigint {
  const r = a % P;
  return r < 0n ? r + P : r;
}

function curveRhs(x: bigint): bigint {
  return mod(x * x * x - 3n * x + B);
}

function modPow(base: bigint, exp: bigint): bigint {
  let result = 1n;
  let b = mod(base);
  for (let e = exp; e > 0n; e >>= 1n) {
    if (e & 1n) result = mod(result * b);
    b = mod(b * b);
  }
  return result;
}

function decodeCoordinate(value: unknown, name: string): Uint8Array {
  if (typeof value !== "string") throw new TypeError(`did:key: JWK "${name}" is missing`);
  // strict, as jose's decoder was (Buffer's skips what is not base64url); without jose on every start that reads a key
  if (!/^[A-Za-z0-9_-]*$/.test(value)) throw new TypeError(`did:key: JWK "${name}" is not base64url`);
  const bytes = new Uint8Array(Buffer.from(value, "base64url"));
  if (bytes.length !== 32) throw new TypeError(`did:key: JWK "${name}" must be 32 bytes`);
  return bytes;
}

function toBigInt(bytes: Uint8Array): bigint {
  return bytes.length === 0 ? 0n : BigInt(`0x${Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length).toString("hex")}`);
}

function fromBigInt(n: bigint): Uint8Array {
  return hexToBytes(n.toString(16).padStart(64, "0"));
}

function hexToBytes(hex: string): Uint8Array {
  const even = hex.length % 2 === 0 ? hex : "0" + hex;
  const out = new Uint8Array(even.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(even.slice(i * 2, i * 2 + 2), 16);
  return out;
}
