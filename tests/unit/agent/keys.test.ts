import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, statSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { calculateJwkThumbprint, compactVerify, importJWK } from "jose";
import { generateKeyPem, loadKey, loadOrCreateKey } from "../../../src/agent/keys.ts";
import { jwkFromDidKey } from "../../../src/protocol/did-key.ts";

const dir = mkdtempSync(join(tmpdir(), "ath-keys-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function openssl(...args: string[]): string {
  const r = Bun.spawnSync(["openssl", ...args], { stderr: "pipe" });
  if (r.exitCode !== 0) throw new Error(`openssl ${args.join(" ")}: ${r.stderr.toString()}`);
  return r.stdout.toString();
}

/** Signs with the loaded key, verifies with its public JWK: the two halves belong together. */
async function signsAndVerifies(pem: string): Promise<void> {
  const key = await loadKey(pem);
  const { CompactSign } = await import("jose");
  const jws = await new CompactSign(new TextEncoder().encode("x")).setProtectedHeader({ alg: "ES256" }).sign(key.privateKey);
  await compactVerify(jws, await importJWK(key.publicJwk, "ES256"));
}

describe("agent keys — PEM loading", () => {
  test("a generated key is PKCS#8 and loads with its JWK, RFC 7638 thumbprint and did:key", async () => {
    const pem = await generateKeyPem();
    expect(pem).toStartWith("-----BEGIN PRIVATE KEY-----");
    const key = await loadKey(pem);
    expect(Object.keys(key.publicJwk).sort()).toEqual(["crv", "kty", "x", "y"]);
    expect(key.thumbprint).toBe(await calculateJwkThumbprint(key.publicJwk, "sha256"));
    expect(key.thumbprint).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(jwkFromDidKey(key.didKey)).toEqual(key.publicJwk as never);
    expect(key.privateKey.extractable).toBe(false);
    await signsAndVerifies(pem);
  });

  test("a SEC1 'EC PRIVATE KEY' from openssl ecparam loads as the same key openssl derives", async () => {
    const sec1 = openssl("ecparam", "-name", "prime256v1", "-genkey", "-noout");
    expect(sec1).toStartWith("-----BEGIN EC PRIVATE KEY-----");
    const path = join(dir, "sec1.pem");
    writeFileSync(path, sec1);
    const pkcs8 = openssl("pkcs8", "-topk8", "-nocrypt", "-in", path);
    const a = await loadKey(sec1);
    const b = await loadKey(pkcs8);
    expect(a.publicJwk).toEqual(b.publicJwk);
    expect(a.didKey).toBe(b.didKey);
    await signsAndVerifies(sec1);
  });

  test("openssl ecparam output with its EC PARAMETERS block still loads", async () => {
    const both = openssl("ecparam", "-name", "prime256v1", "-genkey");
    expect(both).toContain("-----BEGIN EC PARAMETERS-----");
    await signsAndVerifies(both);
  });

  test("keys that are not unencrypted P-256 private keys are refused with a clear Error", async () => {
    const p384 = openssl("ecparam", "-name", "secp384r1", "-genkey", "-noout");
    const p384pkcs8 = openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-384");
    const rsa = openssl("genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:1024");
    const cases: Array<[string, RegExp]> = [
      ["", /not a PEM file/],
      ["hello", /not a PEM file/],
      [p384, /not on curve P-256/],
      [p384pkcs8, /not a valid P-256/],
      [rsa, /not a valid P-256/],
      ["-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n", /unsupported PEM type "PUBLIC KEY"/],
      ["-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n", /encrypted/],
      ["-----BEGIN EC PRIVATE KEY-----\nMAMCAQE=\n-----END EC PRIVATE KEY-----\n", /malformed EC PRIVATE KEY/],
    ];
    for (const [pem, message] of cases) {
      const err = await loadKey(pem).then(() => undefined, (e: unknown) => e);
      expect(err).toBeInstanceOf(Error);
      expect((err as Error).message).toMatch(message);
    }
  });
});

describe("agent keys — the key file", () => {
  test("the key file is created 0600 in new directories and reused, never overwritten", async () => {
    const path = join(dir, "home", "keys", "agent.pem");
    const first = await loadOrCreateKey(path);
    expect(first.created).toBe(true);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    const pem = readFileSync(path, "utf8");
    const second = await loadOrCreateKey(path);
    expect(second.created).toBe(false);
    expect(second.key.didKey).toBe(first.key.didKey);
    expect(readFileSync(path, "utf8")).toBe(pem);
  });

  test("concurrent first runs agree on one key", async () => {
    const path = join(dir, "race", "agent.pem");
    const results = await Promise.all(Array.from({ length: 8 }, () => loadOrCreateKey(path)));
    expect(results.filter((r) => r.created)).toHaveLength(1);
    expect(new Set(results.map((r) => r.key.didKey)).size).toBe(1);
  });

  test("an existing unreadable key is an error, not a replacement", async () => {
    const path = join(dir, "bad.pem");
    writeFileSync(path, "garbage", { mode: 0o600 });
    await expect(loadOrCreateKey(path)).rejects.toThrow(/not a PEM file/);
    expect(readFileSync(path, "utf8")).toBe("garbage");
  });
});
