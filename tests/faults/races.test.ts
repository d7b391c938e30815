/**
 * One transaction per decision (DESIGN §14), raced for real: 200 token exchanges of one agent in flight while an admin
 * suspends it — on one compiled gateway over SQLite, and on two over one PostgreSQL database (exchanges at A, the
 * suspension at B). Each exchange either committed before the suspension (and the suspension revoked its token) or
 * after it (and was refused), so once the agent is approved again no token of the race works. Before the fix, 66 of
 * 200 (SQLite) and 196 of 200 (PostgreSQL) survived.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { SQL } from "bun";
import { readFileSync } from "node:fs";
import { authorize, call, consent, exchange, registeredAgent } from "../helpers/agent.ts";
import { ATH_BIN, ensureBinary } from "../helpers/cli-binary.ts";
import { startGateway, type Gateway } from "../helpers/gateway.ts";
import { PG_URL } from "../helpers/store-harness.ts";
import { startWorld } from "../helpers/world.ts";

const RACERS = 200;

interface Racer {
  code: string;
  sessionId: string;
}

/** One agent with `n` consented sessions waiting for their exchange. */
async function consentedSessions(baseUrl: string, n: number) {
  const { agent, client } = await registeredAgent(baseUrl, { providers: [{ provider_id: "mail", scopes: ["mail:read"] }] });
  const racers: Racer[] = [];
  const one = async () => {
    const a = await authorize(baseUrl, agent, client, { provider_id: "mail", scopes: ["mail:read"] });
    const c = await consent(String(a.json.authorization_url));
    if (!c.code) throw new Error(`no code: ${c.page.status} ${c.page.body.slice(0, 300)}`);
    racers.push({ code: c.code, sessionId: String(a.json.ath_session_id) });
  };
  for (let i = 0; i < n; i += 10) await Promise.all(Array.from({ length: Math.min(10, n - i) }, one));
  return { agent, client, racers };
}

/** Exchanges every code at `exchangeAt`, suspending the agent at `admin` once half of them were answered. */
async function race(exchangeAt: string, admin: Gateway, s: Awaited<ReturnType<typeof consentedSessions>>) {
  let answered = 0;
  let halfway: () => void = () => undefined;
  const half = new Promise<void>((resolve) => (halfway = resolve));
  // a stream spread over ~200 ms, so the suspension lands in the middle of it, not after a burst already queued
  const exchanges = s.racers.map(async (r, i) => {
    await Bun.sleep(i);
    const t = await exchange(exchangeAt, s.agent, s.client, { code: r.code, ath_session_id: r.sessionId });
    if (++answered === RACERS / 2) halfway();
    return t;
  });
  await half;
  const suspended = await call(`${admin.baseUrl}/ath/admin/agents/${s.client.client_id}`, {
    method: "PATCH",
    json: { status: "suspended" },
    headers: { "x-ath-user-token": admin.adminToken },
  });
  expect(suspended.status).toBe(200);
  const results = await Promise.all(exchanges);
  const issued = results.filter((r) => r.status === 200).map((r) => String(r.json.access_token));
  const refused = results.filter((r) => r.status === 403 && r.json.code === "AGENT_UNAPPROVED").length;
  expect(issued.length + refused).toBe(RACERS); // nothing else: no 5xx, no lost session
  // approved again: a token that slipped past the suspension would work now
  const approved = await call(`${admin.baseUrl}/ath/admin/agents/${s.client.client_id}`, {
    method: "PATCH",
    json: { status: "approved" },
    headers: { "x-ath-user-token": admin.adminToken },
  });
  expect(approved.status).toBe(200);
  return { issued, refused, tokensRevoked: Number(suspended.json.tokens_revoked) };
}

async function survivors(baseUrls: string[], tokens: string[]): Promise<number> {
  let alive = 0;
  for (const baseUrl of baseUrls) {
    const statuses = await Promise.all(
      tokens.map(async (t) => (await call(`${baseUrl}/ath/proxy/mail/v1/messages`, { headers: { authorization: `Bearer ${t}` } })).status),
    );
    alive += statuses.filter((s) => s === 200).length;
  }
  return alive;
}

beforeAll(() => ensureBinary(), 120_000);

describe("a suspension racing token exchanges", () => {
  test(`SQLite: of ${RACERS} exchanges racing a suspension, none leaves a token that works after re-approval`, async () => {
    const w = await startWorld({ binary: ATH_BIN });
    try {
      const s = await consentedSessions(w.baseUrl, RACERS);
      const r = await race(w.baseUrl, w.gw, s);
      console.info(`[races] SQLite: ${r.issued.length} issued (${r.tokensRevoked} revoked by the suspension), ${r.refused} refused`);
      expect(r.issued.length).toBeGreaterThan(0);
      expect(r.tokensRevoked).toBe(r.issued.length);
      expect(await survivors([w.baseUrl], r.issued)).toBe(0);
    } finally {
      await w.stop();
    }
  }, 120_000);

  test(`PostgreSQL, two instances: exchanges at A, the suspension at B — no token survives, at either`, async () => {
    const schema = `ath_race_${Buffer.from(crypto.getRandomValues(new Uint8Array(6))).toString("hex")}`;
    const db = new URL(PG_URL);
    db.searchParams.set("schema", schema);
    const env = { ATH_MASTER_KEY: Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("hex") };
    const a = await startWorld({ binary: ATH_BIN, extraArgs: ["--db", db.href], env });
    let b: Gateway | undefined;
    try {
      // B serves the same providers file as A (its --providers entries are upserted at start)
      b = await startGateway({
        binary: ATH_BIN,
        providers: JSON.parse(readFileSync(a.gw.providersFile, "utf8")),
        extraArgs: ["--db", db.href],
        env: { ...env, E2E_MAIL_SECRET: a.auth.postClient.client_secret },
        adminToken: a.gw.adminToken,
      });
      const s = await consentedSessions(a.baseUrl, RACERS);
      const r = await race(a.baseUrl, b, s);
      console.info(`[races] PostgreSQL A/B: ${r.issued.length} issued (${r.tokensRevoked} revoked by the suspension), ${r.refused} refused`);
      expect(r.issued.length).toBeGreaterThan(0);
      expect(r.tokensRevoked).toBe(r.issued.length);
      expect(await survivors([a.baseUrl, b.baseUrl], r.issued)).toBe(0);
    } finally {
      await b?.cleanup();
      await a.stop();
      const sql = new SQL(PG_URL);
      await sql.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).finally(() => sql.close());
    }
  }, 180_000);
});
