/**
 * verifyAttestation (DESIGN §3 "Identity and attestation"): ES256 only, claims checked before any key work, the key
 * of the agent_id and nothing named in the header, each jti once across every endpoint.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { base64url, generateKeyPair, SignJWT } from "jose";
import { signAttestation } from "../../../../src/agent/attestation.ts";
import { generateKeyPem, loadKey, type AgentKey } from "../../../../src/agent/keys.ts";
import { createKeyResolver } from "../../../../src/gateway/identity/agent-keys.ts";
import {
  checkAttestationClaims,
  verifyAttestation,
  type AttestationCheck,
  type AttestationDeps,
} from "../../../../src/gateway/identity/attestation.ts";
import type { AttestationClaims } from "../../../../src/protocol/schemas.ts";
import { memoryJtiStore, rawSignedJws } from "../../../helpers/attestations.ts";
import { rejection } from "../../../helpers/expect-error.ts";
import type { KeyResolver } from "../../../../src/gateway/context.ts";

const NOW = Date.UTC(2026, 0, 15, 12, 0, 0);
const NOW_S = NOW / 1000;
const GATEWAY = "http://127.0.0.1:8787";

let key: AgentKey;
let other: AgentKey;
beforeAll(async () => {
  key = await loadKey(await generateKeyPem());
  other = await loadKey(await generateKeyPem());
});

/** A resolver that records whether any key work happened. */
function spyKeys(inner: KeyResolver) {
  const log: string[] = [];
  const keys: KeyResolver = {
    get: (id) => (log.push(`get ${id}`), inner.get(id)),
    refresh: (id) => (log.push(`refresh ${id}`), inner.refresh(id)),
  };
  return { keys, log };
}

function setup(agentId = key.didKey, subMismatch: AttestationCheck["subMismatch"] = "INVALID_ATTESTATION") {
  const spy = spyKeys(createKeyResolver({ dev: false }));
  const jti = memoryJtiStore();
  const deps: AttestationDeps = { keys: spy.keys, recordJti: jti.recordJti };
  const check: AttestationCheck = { audience: GATEWAY, agentId, subMismatch, now: NOW };
  return { deps, check, log: spy.log, jtiCalls: jti.calls };
}

/** A properly ES256-signed JWT with exactly the given claims. */
function signed(claims: Record<string, unknown>, by: AgentKey = key): Promise<string> {
  return new SignJWT(claims).setProtectedHeader({ alg: "ES256", typ: "JWT" }).sign(by.privateKey);
}

function validClaims(over: Partial<Record<keyof AttestationClaims, unknown>> = {}): Record<string, unknown> {
  return { iss: key.didKey, sub: key.didKey, aud: GATEWAY, iat: NOW_S, exp: NOW_S + 60, jti: "j-1", ...over };
}

describe("verifyAttestation — accepted", () => {
  test("a fresh attestation signed by the did:key's key is accepted and its jti recorded until exp", async () => {
    const { deps, check, jtiCalls } = setup();
    const jwt = await signAttestation(key, { agentId: key.didKey, audience: GATEWAY, now: NOW, ttlSeconds: 120 });
    const claims = await verifyAttestation(jwt, check, deps);
    expect(claims).toMatchObject({ iss: key.didKey, sub: key.didKey, aud: GATEWAY, iat: NOW_S, exp: NOW_S + 120 });
    expect(jtiCalls).toEqual([[key.didKey, claims.jti, (NOW_S + 120) * 1000, NOW]]);
  });

  test("aud may be an array containing the expected audience", async () => {
    const { deps, check } = setup();
    await verifyAttestation(await signed(validClaims({ aud: ["https://other", GATEWAY] })), check, deps);
  });

  test("iat within 5 minutes either side is accepted", async () => {
    for (const iat of [NOW_S - 300, NOW_S + 300]) {
      expect(() => checkAttestationClaims(validClaims({ iat, exp: iat + 600 }) as AttestationClaims, setup().check)).not.toThrow();
    }
  });
});

describe("verifyAttestation — rejected before any key work", () => {
  const header = (h: object) => base64url.encode(JSON.stringify(h));
  const payload = () => base64url.encode(JSON.stringify(validClaims()));

  test("alg none, HS256 and ES384 are refused by the ES256 allow-list without fetching a key", async () => {
    const hs256 = await new SignJWT(validClaims()).setProtectedHeader({ alg: "HS256" }).sign(new TextEncoder().encode("x".repeat(32)));
    const es384 = await new SignJWT(validClaims())
      .setProtectedHeader({ alg: "ES384" })
      .sign((await generateKeyPair("ES384")).privateKey);
    const cases: Array<[string, string]> = [
      [`${header({ alg: "none" })}.${payload()}.`, `attestation alg must be ES256, got "none"`],
      [`${header({ alg: "none", typ: "JWT" })}.${payload()}.c2ln`, `attestation alg must be ES256, got "none"`],
      [`${header({ typ: "JWT" })}.${payload()}.c2ln`, `attestation alg must be ES256, got "undefined"`],
      [hs256, `attestation alg must be ES256, got "HS256"`],
      [es384, `attestation alg must be ES256, got "ES384"`],
    ];
    for (const [jwt, message] of cases) {
      const { deps, check, log, jtiCalls } = setup();
      const err = await rejection(verifyAttestation(jwt, check, deps));
      expect(err.toJSON()).toEqual({ code: "INVALID_ATTESTATION", message });
      expect(err.status).toBe(401);
      expect(log).toEqual([]);
      expect(jtiCalls).toEqual([]);
    }
  });

  test("a malformed JWT is not a compact JWS", async () => {
    const bad = ["", "abc", "a.b", "a.b.c", "a.b.c.d", `${header({ alg: "ES256" })}.not-json.sig`, `${header({ alg: "ES256" })}.${base64url.encode("[1]")}.sig`];
    for (const jwt of bad) {
      const { deps, check, log } = setup();
      const err = await rejection(verifyAttestation(jwt, check, deps));
      expect(err.toJSON()).toEqual({ code: "INVALID_ATTESTATION", message: "attestation is not a compact JWS (header.payload.signature)" });
      expect(log).toEqual([]);
    }
  });

  test("missing exp, jti or any other required claim is refused, naming the claim", async () => {
    for (const claim of ["iss", "sub", "aud", "iat", "exp", "jti"]) {
      const claims = validClaims();
      delete claims[claim];
      const { deps, check, log } = setup();
      const err = await rejection(verifyAttestation(await signed(claims), check, deps));
      expect(err.code).toBe("INVALID_ATTESTATION");
      expect(err.message).toStartWith(`attestation claims are invalid: ${claim}:`);
      expect(log).toEqual([]);
    }
  });

  test("each claim rule has its own message", async () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [validClaims({ aud: "https://elsewhere.example" }), `attestation aud does not match ${GATEWAY}`],
      [validClaims({ aud: [] }), `attestation aud does not match ${GATEWAY}`],
      [validClaims({ iat: NOW_S - 120, exp: NOW_S - 60 }), "attestation expired"],
      [validClaims({ exp: NOW_S }), "attestation expired"],
      [validClaims({ iat: NOW_S + 301, exp: NOW_S + 400 }), "attestation iat is more than 5 minutes in the future"],
      [validClaims({ iat: NOW_S - 301, exp: NOW_S + 60 }), "attestation iat is more than 5 minutes in the past"],
      [validClaims({ exp: NOW_S + 3661 }), "attestation lifetime exceeds 1 hour (exp > iat + 3600, with 60 s of leeway)"],
      [validClaims({ iss: "did:key:zSomeoneElse" }), `attestation iss "did:key:zSomeoneElse" must be the agent_id or its origin`],
    ];
    for (const [claims, message] of cases) {
      const { deps, check, log, jtiCalls } = setup();
      const err = await rejection(verifyAttestation(await signed(claims), check, deps));
      expect(err.toJSON()).toEqual({ code: "INVALID_ATTESTATION", message });
      expect(log).toEqual([]);
      expect(jtiCalls).toEqual([]);
    }
  });

  test("sub ≠ agent_id answers the configured code: 403 AGENT_IDENTITY_MISMATCH after registration, 401 at register", async () => {
    const jwt = await signAttestation(other, { agentId: other.didKey, audience: GATEWAY, now: NOW });
    const message = `attestation sub ${JSON.stringify(other.didKey)} does not match agent_id ${JSON.stringify(key.didKey)}`;
    for (const [code, status] of [["AGENT_IDENTITY_MISMATCH", 403], ["INVALID_ATTESTATION", 401]] as const) {
      const { deps, check, log } = setup(key.didKey, code);
      const err = await rejection(verifyAttestation(jwt, check, deps));
      expect(err.toJSON()).toEqual({ code, message });
      expect(err.status).toBe(status);
      expect(log).toEqual([]);
    }
  });
});

describe("checkAttestationClaims — iss of https agent ids", () => {
  test("iss may be the https agent_id or its origin, nothing else", () => {
    const agentId = "https://agent.example/agents/a1.json";
    const check: AttestationCheck = { audience: GATEWAY, agentId, subMismatch: "INVALID_ATTESTATION", now: NOW };
    const claims = (iss: string) => validClaims({ iss, sub: agentId }) as AttestationClaims;
    expect(() => checkAttestationClaims(claims(agentId), check)).not.toThrow();
    expect(() => checkAttestationClaims(claims("https://agent.example"), check)).not.toThrow();
    for (const iss of ["https://agent.example/", "https://evil.example", "http://agent.example", "https://agent.example:444"]) {
      expect(() => checkAttestationClaims(claims(iss), check)).toThrow("must be the agent_id or its origin");
    }
  });
});

describe("verifyAttestation — signature and replay", () => {
  test("an attestation signed by another key is refused after one refresh attempt, and no jti is recorded", async () => {
    const { deps, check, log, jtiCalls } = setup();
    const err = await rejection(verifyAttestation(await signed(validClaims(), other), check, deps));
    expect(err.toJSON()).toEqual({
      code: "INVALID_ATTESTATION",
      message: `attestation signature does not verify with the key of ${JSON.stringify(key.didKey)}`,
    });
    expect(log).toEqual([`get ${key.didKey}`, `refresh ${key.didKey}`]);
    expect(jtiCalls).toEqual([]);
  });

  test("a jti is accepted once: the same attestation again is a replay", async () => {
    const { deps, check } = setup();
    const jwt = await signAttestation(key, { agentId: key.didKey, audience: GATEWAY, now: NOW });
    await verifyAttestation(jwt, check, deps);
    const err = await rejection(verifyAttestation(jwt, check, deps));
    expect(err.toJSON()).toEqual({ code: "INVALID_ATTESTATION", message: "attestation jti replayed" });
  });

  test("an agent_id that is neither https nor did:key is refused, naming what is supported", async () => {
    for (const agentId of ["urn:agent:1", "http://agent.example/a.json"]) {
      const { deps, check } = setup(agentId);
      const err = await rejection(verifyAttestation(await signed(validClaims({ iss: agentId, sub: agentId })), check, deps));
      expect(err.code).toBe("INVALID_ATTESTATION");
      expect(err.message).toContain("supported agent_ids are https:// URLs of an agent identity document and did:key");
    }
  });
});

describe("verifyAttestation — what counts as an attestation", () => {
  test("an unencoded-payload JWS (b64: false, RFC 7797) is not an attestation", async () => {
    const jwt = await rawSignedJws({ alg: "ES256", b64: false, crit: ["b64"] }, validClaims({ jti: "j1" }), key);
    const { deps, check } = setup();
    await expect(verifyAttestation(jwt, check, deps)).rejects.toMatchObject({ code: "INVALID_ATTESTATION" });
  });

  test("a did:key agent_id with a fragment is not a second identity for the same key", async () => {
    const agentId = `${key.didKey}#Official-Google-Agent`;
    const jwt = await signed(validClaims({ iss: agentId, sub: agentId, jti: "j2" }));
    const { deps, check } = setup(agentId);
    await expect(verifyAttestation(jwt, check, deps)).rejects.toMatchObject({ code: "INVALID_ATTESTATION" });
  });
});

describe("verifyAttestation — header injection (https agent_id)", () => {
  const AGENT_ID = "https://agent.example/agent.json";
  const ATTACKER_URL = "https://attacker.example/keys";

  /** A resolver whose network is a stub: the agent's identity document (key's) at AGENT_ID; every URL fetched is logged. */
  function stubbedResolver() {
    const fetched: string[] = [];
    const fetchStub = (async (input: string | URL | Request, init?: RequestInit) => {
      // the resolver connects to the checked address and names the host in `Host`: log the URL it means
      const u = new URL(String(input instanceof Request ? input.url : input));
      u.host = new Headers(init?.headers).get("host") ?? u.host;
      const url = u.href;
      fetched.push(url);
      if (url !== AGENT_ID) return new Response("{}", { status: 404 });
      const doc = { ath_version: "0.1", agent_id: AGENT_ID, name: "agent", developer: { name: "d", id: "d" }, public_key: key.publicJwk };
      return Response.json(doc);
    }) as typeof fetch;
    const keys = createKeyResolver({ dev: false, fetch: fetchStub, lookup: async () => ["93.184.216.34"] });
    return { keys, fetched, deps: { keys, recordJti: memoryJtiStore().recordJti } };
  }

  const claims = (over: Record<string, unknown> = {}) => validClaims({ iss: AGENT_ID, sub: AGENT_ID, jti: crypto.randomUUID(), ...over });
  const check = (audience = GATEWAY): AttestationCheck => ({ audience, agentId: AGENT_ID, subMismatch: "INVALID_ATTESTATION", now: NOW });

  test("a key named in the header (jwk, kid, jku, x5u) is never used or fetched: only the agent_id's document counts", async () => {
    const { fetched, deps } = stubbedResolver();
    const header = { alg: "ES256", jwk: other.publicJwk, kid: "attacker", jku: ATTACKER_URL, x5u: ATTACKER_URL };
    const forged = await rawSignedJws(header, claims(), other);
    await expect(verifyAttestation(forged, check(), deps)).rejects.toMatchObject({ code: "INVALID_ATTESTATION" });
    expect(fetched.every((u) => u === AGENT_ID)).toBe(true);
    // the same header on a token the agent really signed is fine: the header names no key the gateway trusts
    const genuine = await rawSignedJws(header, claims(), key);
    expect((await verifyAttestation(genuine, check(), deps)).sub).toBe(AGENT_ID);
  });

  test("alg spellings other than ES256 are refused without fetching a key, and unknown crit extensions are refused", async () => {
    const { fetched, deps } = stubbedResolver();
    for (const header of [{ alg: "es256" }, { alg: "ES256K" }, { alg: "ES256 " }, { alg: ["ES256"] }]) {
      const jwt = await rawSignedJws(header, claims(), key);
      await expect(verifyAttestation(jwt, check(), deps)).rejects.toMatchObject({ code: "INVALID_ATTESTATION" });
    }
    expect(fetched).toEqual([]);
    const crit = await rawSignedJws({ alg: "ES256", crit: ["exp"], exp: 1 }, claims(), key);
    await expect(verifyAttestation(crit, check(), deps)).rejects.toMatchObject({ code: "INVALID_ATTESTATION" });
  });

  test("a jti is single-use across audiences: a register/authorize attestation's jti cannot be reused at the token endpoint", async () => {
    const { deps } = stubbedResolver();
    const jti = crypto.randomUUID();
    const first = await new SignJWT(claims({ jti })).setProtectedHeader({ alg: "ES256" }).sign(key.privateKey);
    await verifyAttestation(first, check(), deps);
    const second = await new SignJWT(claims({ jti, aud: `${GATEWAY}/ath/token` })).setProtectedHeader({ alg: "ES256" }).sign(key.privateKey);
    await expect(verifyAttestation(second, check(`${GATEWAY}/ath/token`), deps)).rejects.toMatchObject({ message: "attestation jti replayed" });
  });
});
