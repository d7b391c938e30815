/**
 * One refresh-token aggregate across two `ath serve` processes on one PostgreSQL (DESIGN §6, §17, §18): the same tests
 * for an ATH agent's family (/ath/token) and an MCP client's (/oauth/token) — four presentations of one refresh token
 * at once, two on each instance, rotate it exactly once (the losers are told it was just spent, nothing is revoked);
 * reuse detected on the second instance kills the family on the first at once (its cache hears of it). The person's
 * part runs in the cookie-jar browser against the real oidc-provider; the MCP server behind is the SDK's.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { call, type Net } from "../helpers/agent.ts";
import type { Gateway } from "../helpers/gateway.ts";
import { eventually } from "../helpers/lifecycle.ts";
import { raceAtStore } from "../helpers/store-race.ts";
import { startPostgresPair, type PostgresPair } from "../helpers/postgres-pair.ts";
import { agentDoor, mcpDoor, PROVIDER, type Door } from "../helpers/refresh-doors.ts";
import { startUpstreamMcp, type UpstreamMcp } from "../helpers/upstream-mcp.ts";
import { mailProvider } from "../helpers/world.ts";

let pair: PostgresPair;
let upstream: UpstreamMcp | undefined;

beforeAll(async () => {
  pair = await startPostgresPair({
    providers: async (auth, api) => {
      upstream = await startUpstreamMcp(auth);
      return { [PROVIDER]: mailProvider(auth, api, { mcp: { url: upstream.url } }) };
    },
  });
}, 60_000);
afterAll(async () => {
  await pair?.stop();
  await upstream?.stop();
});

const at = (g: Gateway): Net => ({ baseUrl: g.baseUrl, fetch: (req) => fetch(req) });
const reuses = async (g: Gateway) =>
  ((await call(`${g.baseUrl}/ath/admin/audit?type=refresh.reuse_detected`, { headers: { "x-ath-user-token": g.adminToken } })).json.events as unknown[]).length;

describe.each([
  ["an ATH agent at /ath/token", (g: Gateway) => agentDoor(at(g), Date.now)],
  ["an MCP client at /oauth/token", (g: Gateway) => mcpDoor(at(g))],
] as [string, (g: Gateway) => Door][])("one refresh family on two instances — %s", (_name, door) => {
  test("four presentations of one refresh token, two on each instance, all waiting at the store at once, rotate it exactly once; the others are told it was just spent and nothing is revoked", async () => {
    const { a, b } = pair;
    const before = await reuses(a);
    const h = await door(a).start();
    // held at the store until all four wait there together: a spend that read, then wrote, would let two through
    const raced = await raceAtStore({ schema: pair.schema, tables: /refresh_tokens$/, racers: 4, send: () => Promise.all([a, b, a, b].map((g) => door(g).refresh(h, h.refresh))) });
    expect(raced.map((r) => r.status).sort()).toEqual([200, 400, 400, 400]);
    for (const r of raced.filter((r) => r.status === 400)) door(a).expectRefused(r, "spent");
    const winner = door(a).tokens(raced.find((r) => r.status === 200)!);
    expect([await door(a).use(winner.access), await door(b).use(winner.access)]).toEqual([200, 200]);
    expect(await door(b).use(h.access)).toBe(200);
    expect(door(b).tokens(await door(b).refresh(h, winner.refresh)).access).toStartWith("ath_tk_");
    expect(await reuses(a)).toBe(before);
  });

  test("reuse of a spent refresh token on B kills the family: the access token A minted is refused on A at once, and its successor too", async () => {
    const { a, b } = pair;
    const before = await reuses(a);
    const h = await door(a).start();
    const next = door(a).tokens(await door(a).refresh(h, h.refresh));
    expect(await door(a).use(next.access)).toBe(200); // A holds it in its cache now
    await Bun.sleep(2_200); // past the race window
    door(b).expectRefused(await door(b).refresh(h, h.refresh), "reused");
    expect(await reuses(b)).toBe(before + 1);
    expect(await door(b).use(next.access)).toBe(401);
    // A hears of it through PostgreSQL NOTIFY (DESIGN §13); the cap only guards a broken feed
    await eventually("A refuses the family's access token", async () => (await door(a).use(next.access)) === 401, 5_000);
    door(a).expectRefused(await door(a).refresh(h, next.refresh), "revoked");
  });
});
