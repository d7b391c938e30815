/**
 * Security review regression guards (unit): attestation header injection (jwk, kid, jku, x5u, crit, alg
 * spellings), one jti cache across audiences, user_redirect_uri look-alikes, proxy URL confusion, and SQL that
 * binds hostile strings instead of splicing them. Each test states a property that holds today.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { SignJWT } from "jose";
import { generateKeyPem, loadKey, type AgentKey } from "../../src/agent/keys.ts";
import { verifyAttestation, type AttestationCheck } from "../../src/gateway/identity/attestation.ts";
import { createKeyResolver } from "../../src/gateway/identity/agent-keys.ts";
import { upstreamUrl } from "../../src/gateway/proxy/url.ts";
import { matchRedirectUri } from "../../src/gateway/rules/redirect-uri.ts";
import { openSqliteStore } from "../../src/store/index.ts";
import { agentFixture, T0 } from "../helpers/store-harness.ts";

const GATEWAY = "http://127.0.0.1:8787";
const AGENT_ID = "https://agent.example/agent.json";
const ATTACKER_URL = "https://attacker.example/keys";

let victim: AgentKey;
let attacker: AgentKey;
beforeAll(async () => {
  victim = await loadKey(await generateKeyPem());
  attacker = await loadKey(await generateKeyPem());
});

/** A resolver whose network is a stub: the agent's identity document (victim's key) at AGENT_ID; every URL fetched is logged. */
function stubbedResolver() {
  const fetched: string[] = [];
  const fetchStub = (async (input: string | URL | Request) => {
    const url = String(input instanceof Request ? input.url : input);
    fetched.push(url);
    if (url !== AGENT_ID) return new Response("{}", { status: 404 });
    const doc = { ath_version: "0.1", agent_id: AGENT_ID, name: "agent", developer: { name: "d", id: "d" }, public_key: victim.publicJwk };
    return Response.json(doc);
  }) as typeof fetch;
  const keys = createKeyResolver({ dev: false, fetch: fetchStub, lookup: async () => ["93.184.216.34"] });
  return { keys, fetched };
}

function deps(keys: ReturnType<typeof createKeyResolver>) {
  const seen = new Set<string>();
  return { keys, recordJti: async (a: string, j: string) => (seen.has(`${a} ${j}`) ? false : (seen.add(`${a} ${j}`), true)) };
}

function claims(over: Record<string, unknown> = {}) {
  const now = Math.floor(Date.now() / 1000);
  return { iss: AGENT_ID, sub: AGENT_ID, aud: GATEWAY, iat: now, exp: now + 60, jti: crypto.randomUUID(), ...over };
}

const check = (audience = GATEWAY): AttestationCheck => ({ audience, agentId: AGENT_ID, subMismatch: "INVALID_ATTESTATION", now: Date.now() });

/** Signs header.payload with ES256 without jose's header checks, so any header can be sent. */
async function rawSign(header: Record<string, unknown>, payload: Record<string, unknown>, by: AgentKey): Promise<string> {
  const enc = (v: unknown) => Buffer.from(JSON.stringify(v)).toString("base64url");
  const input = `${enc(header)}.${enc(payload)}`;
  const sig = await crypto.subtle.sign({ name: "ECDSA", hash: "SHA-256" }, by.privateKey, new TextEncoder().encode(input));
  return `${input}.${Buffer.from(sig).toString("base64url")}`;
}

describe("review — attestation header injection", () => {
  test("a key named in the header (jwk, kid, jku, x5u) is never used or fetched: only the agent_id's document counts", async () => {
    const { keys, fetched } = stubbedResolver();
    const header = { alg: "ES256", jwk: attacker.publicJwk, kid: "attacker", jku: ATTACKER_URL, x5u: ATTACKER_URL };
    const forged = await rawSign(header, claims(), attacker);
    await expect(verifyAttestation(forged, check(), deps(keys))).rejects.toMatchObject({ code: "INVALID_ATTESTATION" });
    expect(fetched.every((u) => u === AGENT_ID)).toBe(true);
    // the same header on a token the agent really signed is fine: the header names no key the gateway trusts
    const genuine = await rawSign(header, claims(), victim);
    expect((await verifyAttestation(genuine, check(), deps(keys))).sub).toBe(AGENT_ID);
  });

  test("alg spellings other than ES256 are refused without fetching a key, and unknown crit extensions are refused", async () => {
    const { keys, fetched } = stubbedResolver();
    for (const header of [{ alg: "es256" }, { alg: "ES256K" }, { alg: "ES256 " }, { alg: ["ES256"] }]) {
      const jwt = await rawSign(header, claims(), victim);
      await expect(verifyAttestation(jwt, check(), deps(keys))).rejects.toMatchObject({ code: "INVALID_ATTESTATION" });
    }
    expect(fetched).toEqual([]);
    const crit = await rawSign({ alg: "ES256", crit: ["exp"], exp: 1 }, claims(), victim);
    await expect(verifyAttestation(crit, check(), deps(keys))).rejects.toMatchObject({ code: "INVALID_ATTESTATION" });
  });

  test("a jti is single-use across audiences: a register/authorize attestation's jti cannot be reused at the token endpoint", async () => {
    const { keys } = stubbedResolver();
    const d = deps(keys);
    const jti = crypto.randomUUID();
    const first = await new SignJWT(claims({ jti })).setProtectedHeader({ alg: "ES256" }).sign(victim.privateKey);
    await verifyAttestation(first, check(), d);
    const second = await new SignJWT(claims({ jti, aud: `${GATEWAY}/ath/token` })).setProtectedHeader({ alg: "ES256" }).sign(victim.privateKey);
    await expect(verifyAttestation(second, check(`${GATEWAY}/ath/token`), d)).rejects.toMatchObject({ message: "attestation jti replayed" });
  });
});

describe("review — user_redirect_uri look-alikes", () => {
  test("userinfo, fragment, backslash, subdomain, mapped-IPv6, query and case tricks never match a registered URI", () => {
    const reg = ["http://127.0.0.1/callback", "https://agent.example/cb"];
    for (const given of [
      "http://127.0.0.1:5@evil.example/callback",
      "http://evil.example/callback#@127.0.0.1",
      "http://evil.example\\@127.0.0.1/callback",
      "http://127.0.0.1.evil.example/callback",
      "http://[::ffff:127.0.0.1]:5/callback",
      "http://127.0.0.1:5/callback#frag",
      "http://127.0.0.1:5/callback?code=injected",
      "http://127.0.0.1:5/Callback",
      "http://127.0.0.1:5/callback/",
      "https://agent.example./cb",
      "https://AGENT.example/cb",
      "https://agent.example/cb#x",
      "https://agent.example@evil.example/cb",
      "https://evil.example/https://agent.example/cb",
    ]) {
      expect({ given, match: matchRedirectUri(reg, given) }).toEqual({ given, match: false });
    }
  });
});

describe("review — proxy URL confusion", () => {
  test("@, ;, unicode dots, encoded ?/# and very long paths stay on api_base_url's origin and under its prefix", () => {
    const base = "https://api.example/v1";
    for (const raw of ["a@evil.example/x", "%40evil.example/x", "a;b=c/d", "%EF%BC%8E%EF%BC%8E/admin", "x%3Fy", "x%23y", "a:b@c", "x".repeat(10_000)]) {
      const u = upstreamUrl(base, raw, "?q=1");
      expect({ raw: raw.slice(0, 20), origin: u.origin, under: u.pathname.startsWith("/v1/"), search: u.search }).toEqual({
        raw: raw.slice(0, 20),
        origin: "https://api.example",
        under: true,
        search: "?q=1",
      });
    }
  });
});

describe("review — SQL binds hostile strings", () => {
  test("quotes, SQL comments, NUL and unicode in stored fields round-trip unchanged and leave the tables intact", async () => {
    const store = openSqliteStore(":memory:");
    try {
      const hostile = "x'); DROP TABLE agents; -- \u0000 ' OR '1'='1 \u202e";
      const agent = agentFixture({ agent_id: `https://agents.example/${encodeURIComponent(hostile)}`, purpose: hostile, developer: { name: hostile, id: hostile } });
      await store.createAgent(agent);
      const back = await store.getAgentByClientId(agent.client_id);
      expect(back?.purpose).toBe(hostile);
      expect(back?.developer.name).toBe(hostile);
      expect(await store.getAgentByClientId("' OR '1'='1")).toBeNull();
      expect(await store.getProvider("x' OR '1'='1")).toBeNull();
      expect((await store.listAgents()).map((a) => a.client_id)).toEqual([agent.client_id]);
      expect(await store.recordJti(agent.agent_id, hostile, T0 + 1000, T0)).toBe(true);
      expect(await store.recordJti(agent.agent_id, hostile, T0 + 1000, T0)).toBe(false);
    } finally {
      await store.close();
    }
  });
});
