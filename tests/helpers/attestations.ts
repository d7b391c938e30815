/**
 * Test agents and their attestations, good and deliberately bad: an agent is a fresh ES256 key whose identity is its
 * did:key (src/agent/keys.ts); `craftAttestation` builds any header/claims combination (wrong aud, expired, future
 * iat, missing jti, alg none, HS256, another key) so the gateway's checks can each be exercised.
 */
import { SignJWT } from "jose";
import { signAttestation } from "../../src/agent/attestation.ts";
import { generateKeyPem, loadKey, type AgentKey } from "../../src/agent/keys.ts";
import { randomString } from "./net.ts";

export interface TestAgent {
  key: AgentKey;
  agentId: string;
}

/** A new agent whose agent_id is the did:key of a fresh P-256 key (or `agentId` if given, e.g. an http URL). */
export async function makeAgent(agentId?: string): Promise<TestAgent> {
  const key = await loadKey(await generateKeyPem());
  return { key, agentId: agentId ?? key.didKey };
}

/** A valid attestation for `audience` (the gateway base URL, or `<base>/ath/token`), issued at `now` (default: the real clock). */
export function attest(agent: TestAgent, audience: string, now?: number): Promise<string> {
  return signAttestation(agent.key, { agentId: agent.agentId, audience, ttlSeconds: 120, ...(now === undefined ? {} : { now }) });
}

export interface CraftOptions {
  /** Signing key (default: the agent's). */
  key?: AgentKey;
  alg?: "ES256" | "HS256" | "none";
  /** Claims merged over the valid defaults; a value of `undefined` removes the claim. */
  claims?: Record<string, unknown>;
  header?: Record<string, unknown>;
}

/** An attestation with any claims/header/alg: valid defaults (iss=sub=agentId, aud, iat=now, exp=+120 s, jti). */
export async function craftAttestation(agent: TestAgent, audience: string, o: CraftOptions = {}): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  const claims: Record<string, unknown> = { iss: agent.agentId, sub: agent.agentId, aud: audience, iat: now, exp: now + 120, jti: randomString(16) };
  for (const [k, v] of Object.entries(o.claims ?? {})) {
    if (v === undefined) delete claims[k];
    else claims[k] = v;
  }
  const alg = o.alg ?? "ES256";
  if (alg === "none") {
    return `${b64({ alg: "none", typ: "JWT", ...o.header })}.${b64(claims)}.`;
  }
  const jwt = new SignJWT(claims).setProtectedHeader({ alg, typ: "JWT", ...o.header });
  if (alg === "HS256") return jwt.sign(new TextEncoder().encode(randomString(32)));
  return jwt.sign((o.key ?? agent.key).privateKey);
}

function b64(value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString("base64url");
}

/** An in-memory Store.recordJti with the same contract (a jti is taken until its expiry), plus a log of its calls. */
export function memoryJtiStore() {
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

/** Signs header.payload with ES256 by `by` without jose's header checks, so any header (b64, jwk, crit…) can be sent. */
export async function rawSignedJws(header: Record<string, unknown>, payload: Record<string, unknown>, by: AgentKey): Promise<string> {
  const input = `${b64(header)}.${b64(payload)}`;
  const sig = await crypto.subtle.sign({ name: "ECDSA", hash: "SHA-256" }, by.privateKey, new TextEncoder().encode(input));
  return `${input}.${Buffer.from(sig).toString("base64url")}`;
}
