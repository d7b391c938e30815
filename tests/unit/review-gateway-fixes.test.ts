/** Regression guards for the security review's findings (unit): b64 attestations, did:key fragments, IPv6 ranges embedding IPv4, __Host- cookie, segments upstreams normalise. */
import { describe, expect, test } from "bun:test";
import { SignJWT } from "jose";
import { generateKeyPem, loadKey } from "../../src/agent/keys.ts";
import { verifyAttestation } from "../../src/gateway/identity/attestation.ts";
import { ensureBinding } from "../../src/gateway/domain/browser-binding.ts";
import type { Gateway } from "../../src/gateway/context.ts";
import { createKeyResolver } from "../../src/gateway/identity/agent-keys.ts";
import { classifyAddress } from "../../src/gateway/identity/ip-address.ts";
import { upstreamUrl } from "../../src/gateway/proxy/url.ts";

const GATEWAY = "http://127.0.0.1:8787";

describe("review — attestation", () => {
  test("an unencoded-payload JWS (b64: false, RFC 7797) is not an attestation", async () => {
    const key = await loadKey(await generateKeyPem());
    const now = Math.floor(Date.now() / 1000);
    const enc = (v: unknown) => Buffer.from(JSON.stringify(v)).toString("base64url");
    const input = `${enc({ alg: "ES256", b64: false, crit: ["b64"] })}.${enc({ iss: key.didKey, sub: key.didKey, aud: GATEWAY, iat: now, exp: now + 60, jti: "j1" })}`;
    const sig = await crypto.subtle.sign({ name: "ECDSA", hash: "SHA-256" }, key.privateKey, new TextEncoder().encode(input));
    const jwt = `${input}.${Buffer.from(sig).toString("base64url")}`;
    const deps = { keys: createKeyResolver({ dev: false }), recordJti: async () => true };
    const check = { audience: GATEWAY, agentId: key.didKey, subMismatch: "INVALID_ATTESTATION" as const, now: Date.now() };
    await expect(verifyAttestation(jwt, check, deps)).rejects.toMatchObject({ code: "INVALID_ATTESTATION" });
  });

  test("a did:key agent_id with a fragment is not a second identity for the same key", async () => {
    const key = await loadKey(await generateKeyPem());
    const agentId = `${key.didKey}#Official-Google-Agent`;
    const now = Math.floor(Date.now() / 1000);
    const jwt = await new SignJWT({ iss: agentId, sub: agentId, aud: GATEWAY, iat: now, exp: now + 60, jti: "j2" })
      .setProtectedHeader({ alg: "ES256" }).sign(key.privateKey);
    const deps = { keys: createKeyResolver({ dev: false }), recordJti: async () => true };
    const check = { audience: GATEWAY, agentId, subMismatch: "INVALID_ATTESTATION" as const, now: Date.now() };
    await expect(verifyAttestation(jwt, check, deps)).rejects.toMatchObject({ code: "INVALID_ATTESTATION" });
  });
});

describe("review — identity document fetch (SSRF)", () => {
  test("NAT64 local-use (64:ff9b:1::/48, RFC 8215) and IPv4-translated (::ffff:0:0/96) addresses embedding private IPv4 are not public", () => {
    expect(classifyAddress("64:ff9b:1::a00:1")).not.toBe("public"); // 10.0.0.1 through a local NAT64
    expect(classifyAddress("::ffff:0:a9fe:a9fe")).not.toBe("public"); // 169.254.169.254
  });
});

describe("review — browser binding cookie", () => {
  test("under https the binding cookie is a __Host- cookie, so a sibling subdomain cannot plant one", () => {
    const gw = { opts: { baseUrl: "https://gw.example" } } as unknown as Gateway;
    const { setCookie } = ensureBinding(gw, new Request("https://gw.example/ath/consent/h"));
    expect(setCookie).toMatch(/^__Host-ath_browser=[\w-]{43}; Path=\/; /);
  });
});

describe("review — proxy path vs upstream normalisation", () => {
  test("segments an upstream may normalise into dot segments (..;  .;  %252e%252e) are refused", () => {
    for (const raw of ["v1/messages/..;/admin", "v1/messages/.;/x", "v1/messages/%2e%2e;jsessionid=1/admin", "v1/messages/%252e%252e/admin"]) {
      expect(() => upstreamUrl("https://api.example/", raw, "")).toThrow(/Invalid proxy path/);
    }
  });
});
