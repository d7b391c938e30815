/**
 * The MCP front door across two `ath serve` instances on one PostgreSQL (DESIGN §6, §18): a code issued after consent
 * on one instance is exchanged on the other; the token works on both; two instances rotating the same refresh
 * token at once — four requests held at the store until all four wait there (tests/helpers/store-race.ts) — rotate
 * it exactly once.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import type { Browser } from "playwright-core";
import { closeContexts, freshPage, sharedChromium } from "../helpers/chromium.ts";
import { codeGrant, registerClient, startClientHost } from "../helpers/mcp-oauth-client.ts";
import { startPostgresPair, type PostgresPair } from "../helpers/postgres-pair.ts";
import { raceAtStore } from "../helpers/store-race.ts";
import { mailMcpProvider, startUpstreamMcp, type UpstreamMcp } from "../helpers/upstream-mcp.ts";
import { MAIL_SCOPES } from "../helpers/world.ts";

let pair: PostgresPair;
let upstream: UpstreamMcp | undefined;
let browser: Browser;

beforeAll(async () => {
  pair = await startPostgresPair({
    providers: async (auth) => {
      upstream = await startUpstreamMcp(auth);
      return {
        mailmcp: mailMcpProvider(auth, upstream, MAIL_SCOPES),
      };
    },
  });
  browser = await sharedChromium();
});

afterAll(async () => {
  await closeContexts(browser);
  await pair?.stop();
  await upstream?.stop();
});

test("consent on one instance, the code exchanged on the other, the token good on both; four refreshes waiting at the store at once rotate once", async () => {
  const { a, b } = pair;
  const host = await startClientHost();
  const clientId = await registerClient(a.baseUrl, host.redirectUrl);
  const { page } = await freshPage(browser);
  // The person consents on A (the upstream knows A's callback); the client exchanges the code at B.
  const tokens = await codeGrant(page, {
    base: a.baseUrl,
    clientId,
    redirectUri: host.redirectUrl,
    resource: `${a.baseUrl}/mcp/mailmcp`,
    login: "alice",
    landings: host.landings,
    tokenEndpoint: `${b.baseUrl}/oauth/token`,
  });
  await host.stop();
  for (const gw of [a, b]) {
    const res = await fetch(`${gw.baseUrl}/mcp/mailmcp`, {
      method: "POST",
      headers: { authorization: `Bearer ${tokens.access_token}`, "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "t", version: "1" } } }),
    });
    expect(res.status).toBe(200);
    await res.body?.cancel();
  }
  const refresh = (base: string) =>
    fetch(`${base}/oauth/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ grant_type: "refresh_token", refresh_token: tokens.refresh_token, client_id: clientId }).toString(),
    });
  const raced = await raceAtStore({
    schema: pair.schema,
    tables: /refresh_tokens$/,
    racers: 4,
    send: () => Promise.all([refresh(a.baseUrl), refresh(b.baseUrl), refresh(a.baseUrl), refresh(b.baseUrl)]),
  });
  const statuses = raced.map((r) => r.status).sort();
  expect(statuses).toEqual([200, 400, 400, 400]);
  // Within 2 s of the rotation the losers are a race, not a theft: the winner's tokens still work.
  const winner = (await raced.find((r) => r.status === 200)!.json()) as { access_token: string };
  for (const r of raced.filter((r) => r.status === 400)) expect(await r.json()).toMatchObject({ error: "invalid_grant" });
  const ping = await fetch(`${b.baseUrl}/mcp/mailmcp`, { method: "POST", headers: { authorization: `Bearer ${winner.access_token}`, "content-type": "application/json", accept: "application/json, text/event-stream" }, body: JSON.stringify({ jsonrpc: "2.0", id: 2, method: "ping" }) });
  expect(ping.status).not.toBe(401);
  await ping.body?.cancel();
});
