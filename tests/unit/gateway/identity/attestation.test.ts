import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { base64url, exportJWK, exportSPKI, generateKeyPair, SignJWT } from "jose";
import { generateKeyPem, loadKey, type AgentKey } from "../../../../src/agent/keys.ts";
import { signAttestation } from "../../../../src/agent/attestation.ts";
import {
  checkAttestationClaims,
  verifyAttestation,
  type AttestationCheck,
  type AttestationDeps,
} from "../../../../src/gateway/identity/attestation.ts";
import { createKeyResolver, type KeyResolver } from "../../../../src/gateway/identity/agent-keys.ts";
import { classifyAddress } from "../../../../src/gateway/identity/ip-address.ts";
import { AthError } from "../../../../src/protocol/errors.ts";
import type { AttestationClaims } from "../../../../src/protocol/schemas.ts";

const NOW = Date.UTC(2026, 0, 15, 12, 0, 0);
const NOW_S = NOW / 1000;
const GATEWAY = "http://127.0.0.1:8787";

let key: AgentKey;
let other: AgentKey;
beforeAll(async () => {
  key = await loadKey(await generateKeyPem());
  other = await loadKey(await generateKeyPem());
});

/** An in-memory Store.recordJti with the same contract, plus a log of its calls. */
function jtiStore() {
  const seen = new Map<string, number>();
  const calls: Array<[string, string, number, number]> = [];
  const recordJti = async (agentId: string, jti: string, expiresAt: number, now: number) => {
    calls.push([agentId, jti, expiresAt, now]);
    const k = `${agentId}\n${jti}`;
    const until = seen.get(k);
    if (until !== undefined && until > now) return false;
    seen.set(k, expiresAt);
    return true;
  };
  return { recordJti, calls };
}

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
  const jti = jtiStore();
  const deps: AttestationDeps = { keys: spy.keys, recordJti: jti.recordJti };
  const check: AttestationCheck = { audience: GATEWAY, agentId, subMismatch, now: NOW };
  return { deps, check, log: spy.log, jtiCalls: jti.calls };
}

async function rejection(p: Promise<unknown>): Promise<AthError> {
  const err = await p.then(() => undefined, (e: unknown) => e);
  if (!(err instanceof AthError)) throw new Error(`expected an AthError, got ${String(err)}`);
  return err;
}

/** A properly ES256-signed JWT with exactly the given claims. */
function signed(claims: Record<string, unknown>, by: AgentKey = key): Promise<string> {
  return new SignJWT(claims).setProtectedHeader({ alg: "ES256", typ: "JWT" }).sign(by.privateKey);
}

function validClaims(over: Partial<Record<keyof AttestationClaims, unknown>> = {}): Record<string, unknown> {
  return { iss: key.didKey, sub: key.didKey, aud: GATEWAY, iat: NOW_S, exp: NOW_S + 60, jti: "j-1", ...over };
}

describe("attestation signing (agent side)", () => {
  test("the header is ES256/JWT with the thumbprint as kid; iss = sub = agent_id, 60 s, random jti", async () => {
    const jwt = await signAttestation(key, { agentId: key.didKey, audience: GATEWAY, now: NOW });
    const [h, p] = jwt.split(".") as [string, string];
    expect(JSON.parse(new TextDecoder().decode(base64url.decode(h)))).toEqual({ alg: "ES256", typ: "JWT", kid: key.thumbprint });
    const claims = JSON.parse(new TextDecoder().decode(base64url.decode(p)));
    expect(claims).toMatchObject({ iss: key.didKey, sub: key.didKey, aud: GATEWAY, iat: NOW_S, exp: NOW_S + 60 });
    expect(base64url.decode(claims.jti).length).toBeGreaterThanOrEqual(16);
    const again = await signAttestation(key, { agentId: key.didKey, audience: GATEWAY, now: NOW });
    expect(JSON.parse(new TextDecoder().decode(base64url.decode(again.split(".")[1]!))).jti).not.toBe(claims.jti);
  });
});

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

// Identity documents ------------------------------------------------------------------------------

/** A real identity host on loopback: documents per path, hit counts, redirects and oversize bodies. */
const routes = new Map<string, () => Response>();
const hits = new Map<string, number>();
let server: ReturnType<typeof Bun.serve>;
let origin: string;
beforeAll(() => {
  server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch(req) {
      const path = new URL(req.url).pathname;
      hits.set(path, (hits.get(path) ?? 0) + 1);
      return routes.get(path)?.() ?? new Response("not found", { status: 404 });
    },
  });
  origin = `http://127.0.0.1:${server.port}`;
});
afterAll(() => server.stop(true));

function identityDoc(agentId: string, publicKey: unknown): object {
  return { ath_version: "0.1", agent_id: agentId, name: "Test agent", developer: { name: "Dev", id: "dev-1" }, public_key: publicKey };
}

/** Serves a document at `path` whose public_key is whatever `current()` returns at request time. */
function serveDoc(path: string, current: () => unknown): string {
  const agentId = `${origin}${path}`;
  routes.set(path, () => Response.json(identityDoc(agentId, current())));
  hits.set(path, 0);
  return agentId;
}

function clock(start = NOW) {
  let t = start;
  return { now: () => t, advance: (ms: number) => void (t += ms) };
}

describe("identity — agent identity documents (dev: loopback http)", () => {
  test("public_key as a JWK and as an SPKI PEM both verify attestations", async () => {
    const pem = await exportSPKI(await crypto.subtle.importKey("jwk", key.publicJwk, { name: "ECDSA", namedCurve: "P-256" }, true, ["verify"]));
    for (const [path, pk] of [["/jwk.json", key.publicJwk], ["/pem.json", pem]] as const) {
      const agentId = serveDoc(path, () => pk);
      const keys = createKeyResolver({ dev: true, now: () => NOW });
      const jti = jtiStore();
      const check: AttestationCheck = { audience: GATEWAY, agentId, subMismatch: "INVALID_ATTESTATION", now: NOW };
      const jwt = await signAttestation(key, { agentId, audience: GATEWAY, now: NOW });
      expect((await verifyAttestation(jwt, check, { keys, recordJti: jti.recordJti })).sub).toBe(agentId);
      expect(hits.get(path)).toBe(1);
    }
  });

  test("a document is cached for 5 minutes, then fetched again", async () => {
    const agentId = serveDoc("/cached.json", () => key.publicJwk);
    const c = clock();
    const keys = createKeyResolver({ dev: true, now: c.now });
    await keys.get(agentId);
    c.advance(5 * 60_000 - 1);
    await keys.get(agentId);
    expect(hits.get("/cached.json")).toBe(1);
    c.advance(1);
    await keys.get(agentId);
    expect(hits.get("/cached.json")).toBe(2);
  });

  test("refresh re-fetches at most once a minute per agent_id", async () => {
    const agentId = serveDoc("/throttle.json", () => key.publicJwk);
    const c = clock();
    const keys = createKeyResolver({ dev: true, now: c.now });
    await keys.get(agentId);
    expect(await keys.refresh(agentId)).toBeNull();
    c.advance(59_999);
    expect(await keys.refresh(agentId)).toBeNull();
    expect(hits.get("/throttle.json")).toBe(1);
    c.advance(1);
    expect(await keys.refresh(agentId)).not.toBeNull();
    expect(hits.get("/throttle.json")).toBe(2);
    expect(await keys.refresh(agentId)).toBeNull();
    expect(hits.get("/throttle.json")).toBe(2);
  });

  test("a rotated key is picked up by the refresh after a signature failure, once the throttle allows", async () => {
    let published: unknown = key.publicJwk;
    const agentId = serveDoc("/rotate.json", () => published);
    const c = clock();
    const keys = createKeyResolver({ dev: true, now: c.now });
    const jti = jtiStore();
    const verify = async (by: AgentKey) =>
      verifyAttestation(
        await signAttestation(by, { agentId, audience: GATEWAY, now: c.now() }),
        { audience: GATEWAY, agentId, subMismatch: "INVALID_ATTESTATION", now: c.now() },
        { keys, recordJti: jti.recordJti },
      );
    await verify(key);
    published = other.publicJwk;
    expect((await rejection(verify(other))).message).toContain("attestation signature does not verify");
    expect(hits.get("/rotate.json")).toBe(1);
    c.advance(60_000);
    await verify(other);
    expect(hits.get("/rotate.json")).toBe(2);
  });

  test("redirects are followed up to 3 times under the same rules", async () => {
    // /chain{n} redirects n times (absolute and relative Locations) before the document of agent_id /chain{n}.
    for (const n of [3, 4]) {
      const agentId = `${origin}/chain${n}`;
      for (let i = 0; i < n; i++) {
        const next = i + 1 === n ? `/chain${n}-doc.json` : `/chain${n}-${i + 1}`;
        routes.set(i === 0 ? `/chain${n}` : `/chain${n}-${i}`, () => Response.redirect(i % 2 ? next : `${origin}${next}`, 302));
      }
      routes.set(`/chain${n}-doc.json`, () => Response.json(identityDoc(agentId, key.publicJwk)));
    }
    routes.set("/to-file", () => new Response(null, { status: 302, headers: { location: "file:///etc/passwd" } }));
    const keys = createKeyResolver({ dev: true });
    await keys.get(`${origin}/chain3`);
    const show = (path: string) => JSON.stringify(`${origin}${path}`);
    expect((await rejection(keys.get(`${origin}/chain4`))).message).toBe(
      `cannot get the public key of ${show("/chain4")}: too many redirects`,
    );
    expect(hits.get("/chain4-doc.json")).toBeUndefined();
    expect((await rejection(keys.get(`${origin}/to-file`))).message).toBe(
      `cannot get the public key of ${show("/to-file")}: file:// is not allowed (https:// only, or http:// in dev)`,
    );
  });

  test("bad documents are refused with the reason", async () => {
    const p384 = await exportJWK((await generateKeyPair("ES384", { extractable: true })).publicKey);
    const priv = await exportJWK((await generateKeyPair("ES256", { extractable: true })).privateKey);
    const rsaPem = await exportSPKI((await generateKeyPair("RS256", { extractable: true })).publicKey);
    const big = "x".repeat(65 * 1024);
    const cases: Array<[string, () => Response, string]> = [
      ["/404.json", () => new Response("nope", { status: 404 }), "the identity document answered HTTP 404"],
      ["/text.json", () => new Response("hello"), "the identity document is not JSON"],
      ["/schema.json", () => Response.json({ agent_id: "x" }), "the identity document does not match the AgentIdentityDocument schema"],
      ["/other.json", () => Response.json(identityDoc("https://someone.example/a.json", key.publicJwk)), `the identity document is for "https://someone.example/a.json"`],
      ["/p384.json", () => Response.json(identityDoc(`${origin}/p384.json`, p384)), "public_key is not a P-256 EC JWK"],
      ["/priv.json", () => Response.json(identityDoc(`${origin}/priv.json`, priv)), "public_key contains private key material"],
      ["/rsa.json", () => Response.json(identityDoc(`${origin}/rsa.json`, rsaPem)), "public_key is not a P-256 public key"],
      ["/cert.json", () => Response.json(identityDoc(`${origin}/cert.json`, "hello")), "public_key is not an SPKI PEM or a JWK"],
      ["/big.json", () => Response.json(identityDoc(`${origin}/big.json`, big)), "the identity document is larger than 64 KiB"],
      [
        "/big-stream.json",
        () =>
          new Response(
            new ReadableStream({
              pull(ctrl) {
                ctrl.enqueue(new TextEncoder().encode("x".repeat(16 * 1024)));
              },
            }),
          ),
        "the identity document is larger than 64 KiB",
      ],
    ];
    const keys = createKeyResolver({ dev: true });
    for (const [path, respond, why] of cases) {
      routes.set(path, respond);
      const agentId = `${origin}${path}`;
      const err = await rejection(keys.get(agentId));
      expect(err.toJSON()).toEqual({ code: "INVALID_ATTESTATION", message: `cannot get the public key of ${JSON.stringify(agentId)}: ${why}` });
    }
  });

  test("an unreachable identity host is refused", async () => {
    const dead = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response() });
    const agentId = `http://127.0.0.1:${dead.port}/a.json`;
    await dead.stop(true);
    const err = await rejection(createKeyResolver({ dev: true }).get(agentId));
    expect(err.message).toBe(`cannot get the public key of ${JSON.stringify(agentId)}: the identity document could not be fetched`);
  });
});

describe("identity — outside dev mode", () => {
  function guarded(lookup: (host: string) => Promise<string[]>) {
    const fetched: string[] = [];
    const doc = (url: string) => Response.json(identityDoc(url, key.publicJwk));
    const fakeFetch = (async (input: RequestInfo | URL) => {
      fetched.push(String(input));
      return doc(String(input));
    }) as typeof fetch;
    return { keys: createKeyResolver({ dev: false, fetch: fakeFetch, lookup }), fetched };
  }

  test("http:// agent_ids and loopback/private hosts are refused without a request", async () => {
    const { keys, fetched } = guarded(async (host) => (host === "localhost" ? ["127.0.0.1", "::1"] : ["10.1.2.3"]));
    const cases: Array<[string, string]> = [
      [`${origin}/a.json`, "http:// only with ath serve --dev"],
      ["https://127.0.0.1/a.json", "host 127.0.0.1 is or resolves to a loopback address, which is not allowed"],
      ["https://[::1]/a.json", "host ::1 is or resolves to a loopback address, which is not allowed"],
      ["https://localhost/a.json", "host localhost is or resolves to a loopback address, which is not allowed"],
      ["https://10.0.0.1/a.json", "host 10.0.0.1 is or resolves to a private address, which is not allowed"],
      ["https://169.254.169.254/latest", "host 169.254.169.254 is or resolves to a private address, which is not allowed"],
      ["https://[::ffff:127.0.0.1]/a.json", "is or resolves to a loopback address"],
      ["https://intranet.example/a.json", "host intranet.example is or resolves to a private address, which is not allowed"],
    ];
    for (const [agentId, why] of cases) {
      const err = await rejection(keys.get(agentId));
      expect(err.code).toBe("INVALID_ATTESTATION");
      expect(err.message).toContain(why);
    }
    expect(fetched).toEqual([]);
  });

  test("the real resolver sees localhost as loopback", async () => {
    const err = await rejection(createKeyResolver({ dev: false }).get("https://localhost/a.json"));
    expect(err.message).toContain("resolves to a loopback address");
  });

  test("an https host is fetched only when every address it resolves to is public", async () => {
    const { keys, fetched } = guarded(async (host) => (host === "mixed.example" ? ["93.184.216.34", "192.168.1.1"] : ["93.184.216.34", "2606:2800:220:1::1"]));
    await keys.get("https://agent.example/a.json");
    expect(fetched).toEqual(["https://agent.example/a.json"]);
    const err = await rejection(keys.get("https://mixed.example/a.json"));
    expect(err.message).toContain("host mixed.example is or resolves to a private address");
    expect(fetched).toHaveLength(1);
  });

  test("a redirect to a private address is refused", async () => {
    const fetched: string[] = [];
    const keys = createKeyResolver({
      dev: false,
      lookup: async () => ["93.184.216.34"],
      fetch: (async (input: RequestInfo | URL) => {
        fetched.push(String(input));
        return new Response(null, { status: 302, headers: { location: "https://10.0.0.7/a.json" } });
      }) as typeof fetch,
    });
    const err = await rejection(keys.get("https://agent.example/a.json"));
    expect(err.message).toContain("host 10.0.0.7 is or resolves to a private address");
    expect(fetched).toEqual(["https://agent.example/a.json"]);
  });
});

describe("identity — address classes", () => {
  test("private, loopback, link-local and reserved ranges are not public (IPv4 and IPv6)", () => {
    const table: Record<string, "public" | "loopback" | "private"> = {
      "127.0.0.1": "loopback", "127.255.0.9": "loopback", "::1": "loopback", "::ffff:127.0.0.1": "loopback",
      "0.0.0.0": "private", "10.0.0.1": "private", "100.64.0.1": "private", "169.254.169.254": "private",
      "172.16.0.1": "private", "172.31.255.255": "private", "192.168.0.1": "private", "192.0.2.1": "private",
      "198.18.0.1": "private", "224.0.0.1": "private", "255.255.255.255": "private",
      "::": "private", "fc00::1": "private", "fd12:3456::1": "private", "fe80::1": "private", "fe80::1%eth0": "private",
      "ff02::1": "private", "2001:db8::1": "private", "::ffff:10.0.0.1": "private", "::ffff:a9fe:a9fe": "private",
      "64:ff9b::a00:1": "private", "2002:0a00:0001::1": "private", "not-an-ip": "private",
      "93.184.216.34": "public", "8.8.8.8": "public", "172.32.0.1": "public", "100.128.0.1": "public",
      "2606:2800:220:1:248:1893:25c8:1946": "public", "::ffff:8.8.8.8": "public", "64:ff9b::808:808": "public",
    };
    for (const [ip, kind] of Object.entries(table)) expect([ip, classifyAddress(ip)]).toEqual([ip, kind]);
  });
});

describe("identity — did:key", () => {
  test("a did:key gives its key without I/O, has nothing to refresh, and a bad one is refused", async () => {
    const keys = createKeyResolver({ dev: false, fetch: (() => { throw new Error("no I/O expected"); }) as unknown as typeof fetch });
    const k = await keys.get(key.didKey);
    expect((k.algorithm as EcKeyAlgorithm).namedCurve).toBe("P-256");
    expect(await keys.refresh(key.didKey)).toBeNull();
    const err = await rejection(keys.get("did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK"));
    expect(err.message).toStartWith(`agent_id "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2doK" is not a valid did:key:`);
  });
});
