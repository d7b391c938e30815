/** Sealing at rest (AES-256-GCM under the master key, associated data naming the field). */
import { describe, expect, test } from "bun:test";
import { mkdtemp, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadOrCreateMasterKey, MasterKeySealer as Sealer } from "../../../../src/gateway/crypto/sealing.ts";

const key = () => crypto.getRandomValues(new Uint8Array(32));

describe("sealing", () => {
  test("a sealed value opens with the same key and aad, and hides the plaintext", async () => {
    const s = await Sealer.fromRawKey(key());
    const sealed = await s.seal("upstream-refresh-token ✓", "grant:g1:refresh");
    expect(sealed).toMatch(/^v1\.[\w-]{16}\.[\w-]+$/);
    expect(sealed).not.toContain("upstream");
    expect(await s.open(sealed, "grant:g1:refresh")).toBe("upstream-refresh-token ✓");
    expect(await s.seal("x", "a")).not.toBe(await s.seal("x", "a")); // fresh IV each time
  });

  test("another aad, another key, or an altered byte refuses to open", async () => {
    const s = await Sealer.fromRawKey(key());
    const sealed = await s.seal("secret", "grant:g1:access");
    await expect(s.open(sealed, "grant:g2:access")).rejects.toThrow();
    await expect((await Sealer.fromRawKey(key())).open(sealed, "grant:g1:access")).rejects.toThrow();
    const [v, iv, body] = sealed.split(".") as [string, string, string];
    const flipped = Buffer.from(body, "base64url");
    flipped[0] = flipped[0]! ^ 1;
    await expect(s.open(`${v}.${iv}.${flipped.toString("base64url")}`, "grant:g1:access")).rejects.toThrow();
    await expect(s.open("v1.AAAA.AA", "grant:g1:access")).rejects.toThrow();
    await expect(s.open("garbage", "x")).rejects.toThrow(TypeError);
  });

  test("a value WebCrypto sealed with AES-GCM (ciphertext ‖ tag) opens: the format is the standard one", async () => {
    const raw = key();
    const s = await Sealer.fromRawKey(raw);
    const k = await crypto.subtle.importKey("raw", raw, "AES-GCM", false, ["encrypt", "decrypt"]);
    const iv = crypto.getRandomValues(new Uint8Array(12));
    const ct = await crypto.subtle.encrypt({ name: "AES-GCM", iv, additionalData: new TextEncoder().encode("aad") }, k, new TextEncoder().encode("hello"));
    expect(await s.open(`v1.${Buffer.from(iv).toString("base64url")}.${Buffer.from(ct).toString("base64url")}`, "aad")).toBe("hello");
  });

  test("the master key file is created once, 0600, and reused", async () => {
    const dir = await mkdtemp(join(tmpdir(), "ath-key-"));
    try {
      const a = loadOrCreateMasterKey(dir);
      expect((await stat(join(dir, "master.key"))).mode & 0o777).toBe(0o600);
      expect(Buffer.from(loadOrCreateMasterKey(dir)).equals(Buffer.from(a))).toBe(true);
      expect(() => loadOrCreateMasterKey(dir, "too-short")).toThrow("ATH_MASTER_KEY must be 32 bytes");
      expect(loadOrCreateMasterKey(dir, "ab".repeat(32)).byteLength).toBe(32);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
