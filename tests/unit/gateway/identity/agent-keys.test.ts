/**
 * The agent key resolver (DESIGN §3 "Identity and attestation"): an agent_id's public key from its did:key or from
 * its https identity document — fetched under SSRF rules, cached 5 minutes, refreshed at most once a minute.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { exportJWK, exportSPKI, generateKeyPair } from "jose";
import { signAttestation } from "../../../../src/agent/attestation.ts";
import { generateKeyPem, loadKey, type AgentKey } from "../../../../src/agent/keys.ts";
import { createKeyResolver } from "../../../../src/gateway/identity/agent-keys.ts";
import { verifyAttestation, type AttestationCheck } from "../../../../src/gateway/identity/attestation.ts";
import { memoryJtiStore } from "../../../helpers/attestations.ts";
import { rejection } from "../../../helpers/expect-error.ts";

const NOW = Date.UTC(2026, 0, 15, 12, 0, 0);
const GATEWAY = "http://127.0.0.1:8787";

let key: AgentKey;
let other: AgentKey;
beforeAll(async () => {
  key = await loadKey(await generateKeyPem());
  other = await loadKey(await generateKeyPem());
});

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
      const jti = memoryJtiStore();
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

  test("Cache-Control is respected: no-store and no-cache are not cached, max-age shortens the 5 minutes", async () => {
    for (const [path, header, expected] of [["/nostore.json", "no-store", 2], ["/nocache.json", "private, no-cache", 2], ["/short.json", "max-age=10", 2], ["/long.json", "max-age=86400", 1]] as const) {
      const agentId = `${origin}${path}`;
      routes.set(path, () => Response.json(identityDoc(agentId, key.publicJwk), { headers: { "cache-control": header } }));
      hits.set(path, 0);
      const c = clock();
      const keys = createKeyResolver({ dev: true, now: c.now });
      await keys.get(agentId);
      c.advance(10_000);
      await keys.get(agentId);
      expect({ path, fetched: hits.get(path) }).toEqual({ path, fetched: expected });
    }
  });

  test("at most 16 documents are fetched at once: one more is 503 SERVICE_UNAVAILABLE at once, with Retry-After", async () => {
    const hanging = Bun.serve({ hostname: "127.0.0.1", port: 0, idleTimeout: 0, fetch: () => new Promise<Response>(() => undefined) });
    try {
      const keys = createKeyResolver({ dev: true, now: () => NOW });
      const pending = Array.from({ length: 16 }, (_, i) => keys.get(`http://127.0.0.1:${hanging.port}/agent-${i}`).catch((e: unknown) => e));
      const refused = await rejection(keys.get(`http://127.0.0.1:${hanging.port}/agent-17`));
      expect({ code: refused.code, reason: refused.details?.reason, retryAfter: refused.headers?.["retry-after"] }).toEqual({
        code: "SERVICE_UNAVAILABLE", reason: "identity_fetch_busy", retryAfter: "1",
      });
      // the same agent_id joins the fetch already running instead of taking a slot
      const joined = keys.get(`http://127.0.0.1:${hanging.port}/agent-0`).then(() => "resolved", () => "failed");
      expect(await Promise.race([joined, Bun.sleep(50).then(() => "still waiting")])).toBe("still waiting");
      hanging.stop(true);
      await Promise.all(pending);
      expect(await joined).toBe("failed");
    } finally {
      hanging.stop(true);
    }
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
    const jti = memoryJtiStore();
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
    const fakeFetch = (async (input: RequestInfo | URL, init?: RequestInit) => {
      // connected to the checked address; the name travels as Host (and TLS server name)
      const named = new URL(String(input));
      named.host = new Headers(init?.headers).get("host")!;
      fetched.push(`${String(input)} as ${named.href} (server name ${(init as { tls?: { serverName?: string } }).tls?.serverName})`);
      return doc(named.href);
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
    expect(fetched).toEqual(["https://93.184.216.34/a.json as https://agent.example/a.json (server name agent.example)"]);
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
    expect(fetched).toEqual(["https://93.184.216.34/a.json"]);
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
