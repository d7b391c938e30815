/** The agent's attestation (src/agent/attestation.ts): an ES256 JWT naming the agent, short-lived and single-use. */
import { beforeAll, describe, expect, test } from "bun:test";
import { base64url } from "jose";
import { signAttestation } from "../../../src/agent/attestation.ts";
import { generateKeyPem, loadKey, type AgentKey } from "../../../src/agent/keys.ts";

const NOW = Date.UTC(2026, 0, 15, 12, 0, 0);
const NOW_S = NOW / 1000;
const GATEWAY = "http://127.0.0.1:8787";

let key: AgentKey;
beforeAll(async () => {
  key = await loadKey(await generateKeyPem());
});

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
