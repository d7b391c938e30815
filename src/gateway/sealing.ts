/**
 * Sealing at rest: AES-256-GCM under the gateway's master key. A sealed value is
 * `v1.<iv b64url>.<ciphertext+tag b64url>`; the associated data names what the value is (e.g. "grant:<id>:access")
 * so a sealed blob cannot be moved to another row or field.
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const enc = new TextEncoder();
const dec = new TextDecoder();

export class Sealer {
  private constructor(private readonly key: CryptoKey) {}

  /** `raw` must be 32 bytes. */
  static async fromRawKey(raw: Uint8Array<ArrayBuffer>): Promise<Sealer> {
    if (raw.byteLength !== 32) throw new TypeError("master key must be 32 bytes");
    const key = await crypto.subtle.importKey("raw", raw, "AES-GCM", false, ["encrypt", "decrypt"]);
    return new Sealer(key);
  }

  async seal(plaintext: string, aad: string): Promise<string> {
    const iv = crypto.getRandomValues(new Uint8Array(12));
    const ct = await crypto.subtle.encrypt({ name: "AES-GCM", iv, additionalData: enc.encode(aad) }, this.key, enc.encode(plaintext));
    return `v1.${Buffer.from(iv).toString("base64url")}.${Buffer.from(ct).toString("base64url")}`;
  }

  /** Throws if the blob was altered, sealed under another key, or sealed for another `aad`. */
  async open(sealed: string, aad: string): Promise<string> {
    const [v, iv, ct] = sealed.split(".");
    if (v !== "v1" || !iv || !ct) throw new TypeError("not a sealed value");
    const pt = await crypto.subtle.decrypt(
      { name: "AES-GCM", iv: Buffer.from(iv, "base64url"), additionalData: enc.encode(aad) },
      this.key,
      Buffer.from(ct, "base64url"),
    );
    return dec.decode(pt);
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
