/**
 * Refresh tokens across two `ath serve` instances on one PostgreSQL database (DESIGN §6, §17): two refreshes racing
 * with the same refresh token, one on each instance, both held at the store until both wait there (so they race for
 * certain: tests/helpers/store-race.ts) — exactly one rotates, the other is told `refresh_token_spent`, and the
 * winner's successor keeps working (a race is not reuse); and reuse of a spent refresh token detected on the
 * second instance kills the family on both at once (the proxy's cache on the first hears of it).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { TokenResponse } from "../../src/protocol/index.ts";
import { call, fullFlow } from "../helpers/agent.ts";
import { attest } from "../helpers/attestations.ts";
import { expectError } from "../helpers/expect-error.ts";
import type { Gateway } from "../helpers/gateway.ts";
import { eventually } from "../helpers/lifecycle.ts";
import { startPostgresPair, type PostgresPair } from "../helpers/postgres-pair.ts";
import { raceAtStore } from "../helpers/store-race.ts";

let pair: PostgresPair;
let a: Gateway;
let b: Gateway;
type Flow = Awaited<ReturnType<typeof fullFlow>>;

beforeAll(async () => {
  pair = await startPostgresPair();
  ({ a, b } = pair);
}, 60_000);
afterAll(() => pair?.stop());

async function refreshAt(g: Gateway, f: Flow, refreshToken: string) {
  return call(`${g.baseUrl}/ath/token`, {
    form: {
      grant_type: "refresh_token",
      ...f.client,
      agent_attestation: await attest(f.agent, `${g.baseUrl}/ath/token`),
      refresh_token: refreshToken,
    },
  });
}

const proxyVia = (g: Gateway, token: string) => call(`${g.baseUrl}/ath/proxy/mail/v1/messages`, { headers: { authorization: `Bearer ${token}` } });
const reuses = async (g: Gateway) =>
  ((await call(`${g.baseUrl}/ath/admin/audit?type=refresh.reuse_detected`, { headers: { "x-ath-user-token": g.adminToken } })).json.events as unknown[]).length;

describe("Refresh tokens on two instances sharing PostgreSQL", () => {
  test("two refreshes racing with one refresh token (A and B), both waiting at the store at once: exactly one rotates, the other is refresh_token_spent, and the winner's successor still works", async () => {
    const f = await fullFlow(a.baseUrl, { provider_id: "mail", scopes: ["mail:read"] });
    const rt = String(f.token.json.refresh_token);
    expect(rt).toStartWith("ath_rt_");
    const [ra, rb] = await raceAtStore({ schema: pair.schema, tables: /refresh_tokens$/, racers: 2, send: () => Promise.all([refreshAt(a, f, rt), refreshAt(b, f, rt)]) });
    const statuses = [ra.status, rb.status].sort();
    expect(statuses).toEqual([200, 400]);
    const [winner, loser] = ra.status === 200 ? [ra, rb] : [rb, ra];
    expectError(loser, "INVALID_GRANT", { reason: "refresh_token_spent" });
    const next = TokenResponse.parse(winner.json);
    expect((await proxyVia(a, next.access_token)).status).toBe(200);
    expect((await proxyVia(b, next.access_token)).status).toBe(200);
    const third = await refreshAt(b, f, next.refresh_token!);
    expect(third.status).toBe(200);
    expect(await reuses(a)).toBe(0);
  });

  test("reuse of a spent refresh token on B kills the family: the access token A minted is refused on A at once", async () => {
    const f = await fullFlow(a.baseUrl, { provider_id: "mail", scopes: ["mail:read"] });
    const rt = String(f.token.json.refresh_token);
    const rotated = await refreshAt(a, f, rt);
    expect(rotated.status).toBe(200);
    const next = TokenResponse.parse(rotated.json);
    expect((await proxyVia(a, next.access_token)).status).toBe(200); // A holds it in its cache now
    await Bun.sleep(2_200); // past the race window
    expectError(await refreshAt(b, f, rt), "INVALID_GRANT", { reason: "refresh_token_reused" });
    expect(await reuses(b)).toBe(1);
    expectError(await proxyVia(b, next.access_token), "TOKEN_REVOKED");
    // A hears of it through PostgreSQL NOTIFY (DESIGN §13); the cap only guards a broken feed
    await eventually("A refuses the family's access token", async () => (await proxyVia(a, next.access_token)).status === 401, 5_000);
    expectError(await proxyVia(a, next.access_token), "TOKEN_REVOKED");
    expectError(await refreshAt(a, f, next.refresh_token!), "INVALID_GRANT", { reason: "refresh_token_revoked" });
  });
});
