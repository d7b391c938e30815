/**
 * Sealing at rest: AES-256-GCM under the gateway's master key. A sealed value is
 * `v1.<iv b64url>.<ciphertext+tag b64url>`; the associated data names what the value is (e.g. "grant:<id>:access")
 * so a sealed blob cannot be moved to another row or field.
 */
import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Sealer } from "../context.ts";

const TAG_BYTES = 16;

/** The master key's Sealer (context.ts). */
export class MasterKeySealer implements Sealer {
  // node:crypto's AES-GCM: ~2.5 µs per open against ~44 µs for crypto.subtle, on the proxy's hot path
  // (scripts/bench/proxy.ts: 25–40 µs off every proxied request's median).
  private constructor(private readonly key: Buffer) {}

  /** `raw` must be 32 bytes. */
  static async fromRawKey(raw: Uint8Array<ArrayBuffer>): Promise<MasterKeySealer> {
    if (raw.byteLength !== 32) throw new TypeError("master key must be 32 bytes");
    return new MasterKeySealer(Buffer.from(raw));
  }

  async seal(plaintext: string, aad: string): Promise<string> {
    const iv = randomBytes(12);
    const cipher = createCipheriv("aes-256-gcm", this.key, iv);
    cipher.setAAD(Buffer.from(aad, "utf8"));
    const ct = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final(), cipher.getAuthTag()]);
    return `v1.${iv.toString("base64url")}.${ct.toString("base64url")}`;
  }

  /** Throws if the blob was altered, sealed under another key, or sealed for another `aad`. */
  async open(sealed: string, aad: string): Promise<string> {
    const [v, iv, body] = sealed.split(".");
    if (v !== "v1" || !iv || !body) throw new TypeError("not a sealed value");
    const ct = Buffer.from(body, "base64url");
    if (ct.byteLength < TAG_BYTES) throw new TypeError("not a sealed value");
    const decipher = createDecipheriv("aes-256-gcm", this.key, Buffer.from(iv, "base64url"));
    decipher.setAAD(Buffer.from(aad, "utf8"));
    decipher.setAuthTag(ct.subarray(ct.byteLength - TAG_BYTES));
    return Buffer.concat([decipher.update(ct.subarray(0, ct.byteLength - TAG_BYTES)), decipher.final()]).toString("utf8");
  }
}

/**
 * The master key: `ATH_MASTER_KEY` (64 hex chars or base64url of 32 bytes) if set, else `<dataDir>/master.key`,
 * created (mode 0600) on first start.
 */
export function loadOrCreateMasterKey(dataDir: string, fromEnv?: string): Uint8Array<ArrayBuffer> {
  if (fromEnv) {
    const raw = /^[0-9a-f]{64}$/i.test(fromEnv) ? Buffer.from(fromEnv, "hex") : Buffer.from(fromEnv, "base64url");
    if (raw.byteLength !== 32) throw new Error("ATH_MASTER_KEY must be 32 bytes (64 hex characters or base64url)");
    return new Uint8Array(raw);
  }
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const path = join(dataDir, "master.key");
  if (existsSync(path)) {
    const raw = Buffer.from(readFileSync(path, "utf8").trim(), "base64url");
    if (raw.byteLength !== 32) throw new Error(`${path} is not a valid master key (expected 32 bytes, base64url)`);
    chmodSync(path, 0o600);
    return new Uint8Array(raw);
  }
  const raw = crypto.getRandomValues(new Uint8Array(32));
  writeFileSync(path, Buffer.from(raw).toString("base64url") + "\n", { mode: 0o600, flag: "wx" });
  return raw;
}
