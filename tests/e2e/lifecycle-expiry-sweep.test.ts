/**
 * Expiry and sweeping (issue 5, DESIGN §6, §8) through a real `ath serve --token-ttl 2 --refresh-ttl 3 --session-ttl 3
 * --sweep-interval 1 --sweep-retention 3`: an expired ATH token is 401 TOKEN_EXPIRED, and the sweeper empties the
 * sessions, jti, tokens, refresh_tokens and grants tables (counted in the SQLite file, opened read-only) once their rows lapse —
 * dead grants included — so nothing grows without bound. Attestations here live 3 s so their jti rows lapse too.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { authorize, call, consent, exchange, register, type ClientCredentials } from "../helpers/agent.ts";
import { craftAttestation, makeAgent, type TestAgent } from "../helpers/attestations.ts";
import { expectError } from "../helpers/expect-error.ts";
import { countRows, eventually, LIFECYCLE_TABLES } from "../helpers/lifecycle.ts";
import { startWorld, type World } from "../helpers/world.ts";

let w: World;
let db: string;

beforeAll(async () => {
  w = await startWorld({ extraArgs: ["--token-ttl", "2", "--refresh-ttl", "3", "--session-ttl", "3", "--sweep-interval", "1", "--sweep-retention", "3"] });
  db = join(w.gw.dataDir, "ath.db");
}, 30_000);
afterAll(() => w?.stop());

/** An attestation that expires in 3 s, so the gateway's jti replay entry lapses quickly. */
function shortAttestation(agent: TestAgent, audience: string): Promise<string> {
  return craftAttestation(agent, audience, { claims: { exp: Math.floor(Date.now() / 1000) + 3 } });
}

async function registered(): Promise<{ agent: TestAgent; client: ClientCredentials }> {
  const agent = await makeAgent();
  const r = await register(w.baseUrl, agent, { providers: [{ provider_id: "mail", scopes: ["mail:read"] }], attestation: await shortAttestation(agent, w.baseUrl) });
  if (r.status !== 201) throw new Error(`register: ${r.status} ${r.text}`);
  return { agent, client: { client_id: String(r.json.client_id), client_secret: String(r.json.client_secret) } };
}

/** register → authorize → consent → token with short-lived attestations; returns the ATH token response. */
async function shortLivedFlow() {
  const { agent, client } = await registered();
  const a = await authorize(w.baseUrl, agent, client, { provider_id: "mail", scopes: ["mail:read"], attestation: await shortAttestation(agent, w.baseUrl) });
  const c = await consent(String(a.json.authorization_url));
  if (c.code === undefined) throw new Error(`consent gave no code: ${c.page.status} ${c.page.url}`);
  const t = await exchange(w.baseUrl, agent, client, {
    code: c.code,
    ath_session_id: String(a.json.ath_session_id),
    attestation: await shortAttestation(agent, `${w.baseUrl}/ath/token`),
  });
  if (t.status !== 200) throw new Error(`token: ${t.status} ${t.text}`);
  return { accessToken: String(t.json.access_token), expiresIn: Number(t.json.expires_in) };
}

const proxyWith = (token: string) => call(`${w.baseUrl}/ath/proxy/mail/v1/messages`, { headers: { authorization: `Bearer ${token}` } });

let expired: string;

describe("ATH token lifetime", () => {
  test("an ATH token past its expires_in answers 401 TOKEN_EXPIRED and nothing is forwarded", async () => {
    const t = await shortLivedFlow();
    expect(t.expiresIn).toBe(2);
    expired = t.accessToken;
    await Bun.sleep(t.expiresIn * 1000 + 100);
    const before = w.api.requests.length;
    expectError(await proxyWith(expired), "TOKEN_EXPIRED");
    expect(w.api.requests.length).toBe(before);
  }, 15_000);
});

describe("Sweeper", () => {
  test("expired sessions, jti entries, tokens and dead or orphaned grants are deleted: the tables shrink to empty", async () => {
    const flows = [await shortLivedFlow(), await shortLivedFlow(), await shortLivedFlow()];
    // a consent never finished: its session only lapses
    const pending = await registered();
    const started = await authorize(w.baseUrl, pending.agent, pending.client, {
      provider_id: "mail",
      scopes: ["mail:read"],
      attestation: await shortAttestation(pending.agent, w.baseUrl),
    });
    expect(started.status).toBe(200);
    // a dead grant: the user revoked access at the provider, the refresh after the API's 401 is refused
    await w.auth.revokeAllGrants();
    expectError(await proxyWith(flows[0]!.accessToken), "TOKEN_EXPIRED", { reason: "upstream_grant_revoked" });

    const full = countRows(db);
    expect(full.sessions).toBeGreaterThanOrEqual(4);
    expect(full.jti).toBeGreaterThanOrEqual(4 * 2 + 3);
    expect(full.tokens).toBeGreaterThanOrEqual(3);
    expect(full.grants).toBeGreaterThanOrEqual(3);
    console.info(`[lifecycle] rows before sweeping: ${LIFECYCLE_TABLES.map((t) => `${t}=${full[t]}`).join(" ")}`);

    await eventually("the sweeper to empty sessions, jti, tokens, refresh tokens and grants", () => {
      const now = countRows(db);
      return LIFECYCLE_TABLES.every((t) => now[t] === 0);
    });
    // the audit trail is kept
    expect(countRows(db).audit("upstream.refresh_refused")).toBe(1);
    // a swept token is simply unknown now
    expectError(await proxyWith(expired), "TOKEN_INVALID");
  }, 30_000);

  test("an agent registered without any approved scope (denied) is swept after the retention; an approved one stays (DESIGN §14)", async () => {
    const denied = await makeAgent();
    const r = await register(w.baseUrl, denied, { providers: [{ provider_id: "nosuch", scopes: ["x"] }], attestation: await shortAttestation(denied, w.baseUrl) });
    expect({ status: r.status, agent_status: r.json.agent_status }).toEqual({ status: 201, agent_status: "denied" });
    const approved = await registered();
    const admin = { "x-ath-user-token": w.gw.adminToken };
    const agentUrl = (id: unknown) => `${w.baseUrl}/ath/admin/agents/${String(id)}`;
    expect((await call(agentUrl(r.json.client_id), { headers: admin })).status).toBe(200);
    await eventually("the sweeper to delete the denied agent", async () => (await call(agentUrl(r.json.client_id), { headers: admin })).status === 404);
    expect((await call(agentUrl(approved.client.client_id), { headers: admin })).json.agent_status).toBe("approved");
  }, 30_000);
});
