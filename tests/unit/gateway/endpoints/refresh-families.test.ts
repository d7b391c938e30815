/**
 * One refresh-token aggregate (DESIGN §17, §18): a family of an ATH agent (/ath/token, ATH errors) and one of an MCP
 * client (/oauth/token, OAuth errors) behave identically — the same test, run against both doors, in process over
 * HTTP with a clock the test moves: rotation; a spent token again within 2 s is a race (nothing revoked), later reuse
 * (the family dies, audited); presentations at once rotate once; scope narrows, never widens, and is cut to what the
 * client is approved for now; another client, or the
 * other door, learns nothing; the family dies with /ath/revoke of any member, an admin's revocation, the client's
 * suspension, its deletion (cascade), a dead upstream grant, --refresh-idle and --refresh-ttl; the sweeper keeps a
 * living family and its grant, and deletes it once ended past retention. (Two instances on PostgreSQL:
 * tests/e2e/refresh-families-postgres.test.ts.)
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { hashSecret } from "../../../../src/gateway/crypto/secrets.ts";
import { sweepOnce } from "../../../../src/gateway/ops/sweeper.ts";
import { call } from "../../../helpers/agent.ts";
import { agentDoor, mcpDoor, type Door, type Holder } from "../../../helpers/refresh-doors.ts";
import { ADMIN_TOKEN, BASE, INTROSPECTION_TOKEN, scriptedGateway, type InProcess } from "../../../helpers/in-process.ts";
import type { ScriptedProvider } from "../../../helpers/scripted-provider.ts";

const IDLE_S = 600;
const TTL_S = 1500;
const TOKEN_TTL_S = 300;
const RETAIN_MS = 3_600_000;

let g: InProcess;
let p: ScriptedProvider;
const net = () => ({ baseUrl: BASE, fetch: (req: Request) => g.fetch(req) });
const DOORS: [string, () => Door][] = [
  ["an ATH agent at /ath/token", () => agentDoor(net(), () => g.clock.now())],
  ["an MCP client at /oauth/token", () => mcpDoor(net())],
];

beforeEach(async () => {
  ({ g, p } = await scriptedGateway((p) => ({ mail: p.config({ mcp: { url: `${p.origin}/api/mcp` } }) }), {
    refreshIdleSeconds: IDLE_S,
    refreshTtlSeconds: TTL_S,
    tokenTtlSeconds: TOKEN_TTL_S,
  }));
  p.routes.set("/mcp", (_req, seen) => Response.json({ jsonrpc: "2.0", id: (JSON.parse(seen.body) as { id: number }).id, result: {} }));
});
afterEach(() => g.close());

async function active(token: string): Promise<boolean> {
  const r = await call(`${BASE}/ath/introspect`, { form: { token }, headers: { authorization: `Bearer ${INTROSPECTION_TOKEN}` }, fetch: g.fetch });
  return r.json.active === true;
}
const admin = (method: string, path: string, json?: unknown) =>
  call(`${BASE}${path}`, { method, ...(json === undefined ? {} : { json }), headers: { "x-ath-user-token": ADMIN_TOKEN }, fetch: g.fetch });
const adminRevoke = (token: string) => call(`${BASE}/ath/revoke`, { form: { token }, headers: { "x-ath-user-token": ADMIN_TOKEN }, fetch: g.fetch });

describe.each(DOORS)("one refresh family — %s", (_name, makeDoor) => {
  let door: Door;
  beforeEach(() => {
    door = makeDoor();
  });
  const rotated = async (h: Holder, rt: string, scope?: string) => door.tokens(await door.refresh(h, rt, scope));

  test("a refresh gives a new access and refresh token, the old access token keeps working, the successor rotates again", async () => {
    const h = await door.start();
    expect(h.refresh).toStartWith("ath_rt_");
    expect(h.refreshExpiresIn).toBe(IDLE_S);
    g.clock.advance(30);
    const next = await rotated(h, h.refresh);
    expect([next.access === h.access, next.refresh === h.refresh]).toEqual([false, false]);
    expect(next.scopes.sort()).toEqual(["mail:read", "mail:send"]);
    expect(await door.use(next.access)).toBe(200);
    expect(await door.use(h.access)).toBe(200);
    expect(await door.use((await rotated(h, next.refresh)).access)).toBe(200);
    expect(await g.audited("token.refreshed")).toBe(2);
  });

  test("reuse: the spent token again within 2 s is refused as just spent and revokes nothing; later it kills the whole family, audited once", async () => {
    const h = await door.start();
    const next = await rotated(h, h.refresh);
    g.clock.advance(1);
    door.expectRefused(await door.refresh(h, h.refresh), "spent");
    expect([await active(h.access), await active(next.access)]).toEqual([true, true]);
    expect(await g.audited("refresh.reuse_detected")).toBe(0);
    g.clock.advance(2);
    door.expectRefused(await door.refresh(h, h.refresh), "reused");
    expect(await g.audited("refresh.reuse_detected")).toBe(1);
    expect([await active(h.access), await active(next.access)]).toEqual([false, false]);
    expect(await door.use(next.access)).toBe(401);
    door.expectRefused(await door.refresh(h, next.refresh), "revoked");
  });

  test("race: four presentations of one refresh token at once rotate it exactly once; the others are told it was just spent, nothing is revoked", async () => {
    const h = await door.start();
    const raced = await Promise.all([1, 2, 3, 4].map(() => door.refresh(h, h.refresh)));
    expect(raced.map((r) => r.status).sort()).toEqual([200, 400, 400, 400]);
    for (const r of raced.filter((r) => r.status === 400)) door.expectRefused(r, "spent");
    const winner = door.tokens(raced.find((r) => r.status === 200)!);
    expect(await door.use(winner.access)).toBe(200);
    expect(await g.audited("refresh.reuse_detected")).toBe(0);
    expect(await g.audited("token.refreshed")).toBe(1);
    expect((await rotated(h, winner.refresh)).access).toStartWith("ath_tk_");
  });

  test("scope narrows (space-separated), never widens: a wider scope is refused and spends nothing; a narrowed family stays narrow", async () => {
    const narrow = await door.start(["mail:read"]);
    door.expectRefused(await door.refresh(narrow, narrow.refresh, "mail:read mail:send"), "widening");
    expect((await rotated(narrow, narrow.refresh)).scopes).toEqual(["mail:read"]);
    const all = await door.start();
    const cut = await rotated(all, all.refresh, "mail:read");
    expect(cut.scopes).toEqual(["mail:read"]);
    door.expectRefused(await door.refresh(all, cut.refresh, "mail:send"), "widening");
  });

  test("the new token's scopes are cut to what the client is approved for now", async () => {
    const h = await door.start();
    const agent = (await g.gw.store.getAgentByClientId(h.clientId))!;
    await g.gw.store.updateAgent(h.clientId, {
      approvals: agent.approvals.map((a) => ({ ...a, approved_scopes: a.approved_scopes.filter((s) => s !== "mail:send") })),
    });
    expect((await rotated(h, h.refresh)).scopes).toEqual(["mail:read"]);
  });

  test("another client of the same door presenting the token learns nothing and changes nothing; the owner still rotates it", async () => {
    const a = await door.start();
    const b = await door.start();
    door.expectRefused(await door.refresh(b, a.refresh), "unknown");
    expect(await active(a.access)).toBe(true);
    expect((await rotated(a, a.refresh)).access).toStartWith("ath_tk_");
  });

  test("the family dies with /ath/revoke of its access token or of a refresh token, and with an admin's revocation by token_id", async () => {
    const a = await door.start();
    await adminRevoke(a.access);
    door.expectRefused(await door.refresh(a, a.refresh), "revoked");

    const b = await door.start();
    const next = await rotated(b, b.refresh);
    await adminRevoke(next.refresh);
    expect([await active(b.access), await active(next.access)]).toEqual([false, false]);
    door.expectRefused(await door.refresh(b, next.refresh), "revoked");

    const c = await door.start();
    const later = await rotated(c, c.refresh);
    const listed = await admin("GET", `/ath/admin/tokens?client_id=${encodeURIComponent(c.clientId)}`);
    const first = (listed.json.tokens as { token_id: string }[]).at(-1)!;
    expect((await admin("POST", "/ath/admin/tokens/revoke", { token_id: first.token_id })).json).toEqual({ revoked: 2 });
    expect(await door.use(later.access)).toBe(401);
    door.expectRefused(await door.refresh(c, later.refresh), "revoked");
  });

  test("suspension kills the family for good (approving again does not revive it); deleting the client's agent record deletes its refresh tokens", async () => {
    const h = await door.start();
    expect((await admin("PATCH", `/ath/admin/agents/${encodeURIComponent(h.clientId)}`, { status: "suspended" })).status).toBe(200);
    door.expectRefused(await door.refresh(h, h.refresh), "unapproved");
    expect((await admin("PATCH", `/ath/admin/agents/${encodeURIComponent(h.clientId)}`, { status: "approved" })).status).toBe(200);
    door.expectRefused(await door.refresh(h, h.refresh), "revoked");

    const d = await door.start();
    expect(await g.gw.store.getRefreshToken(hashSecret(d.refresh))).not.toBeNull();
    expect((await admin("DELETE", `/ath/admin/agents/${encodeURIComponent(d.clientId)}`)).status).toBe(200);
    expect(await g.gw.store.getRefreshToken(hashSecret(d.refresh))).toBeNull();
  });

  test("a dead upstream grant — the provider refusing its refresh — kills the family at the next refresh (named as the upstream's), its access tokens revoked", async () => {
    const h = await door.start();
    p.expireAccessTokens();
    p.refuseRefresh = true;
    expect(await door.use(h.access)).toBe(401);
    door.expectRefused(await door.refresh(h, h.refresh), "upstream");
    expect(await active(h.access)).toBe(false);
    door.expectRefused(await door.refresh(h, h.refresh), "revoked");
  });

  test("--refresh-idle: unused that long a refresh token has expired; each use restarts the idle clock, never past --refresh-ttl", async () => {
    const idle = await door.start();
    const h = await door.start();
    let rt = h.refresh;
    for (let used = 0; used + 500 < TTL_S; used += 500) {
      g.clock.advance(500);
      const next = await rotated(h, rt);
      expect(next.refreshExpiresIn).toBeLessThanOrEqual(IDLE_S);
      rt = next.refresh;
    }
    door.expectRefused(await door.refresh(idle, idle.refresh), "expired");
    g.clock.advance(501);
    door.expectRefused(await door.refresh(h, rt), "expired");
  });

  test("the sweeper keeps a living family and its upstream grant once every access token of it is swept, and deletes the family once ended past retention", async () => {
    const h = await door.start();
    const grantId = (await g.gw.store.getToken(hashSecret(h.access)))!.grant_id!;
    let rt = h.refresh;
    for (let i = 0; i < 2; i++) {
      g.clock.advance(500);
      rt = (await rotated(h, rt)).refresh;
    }
    // t = 1400 s: the family's three access tokens (300 s each) ended over 30 s ago; the family lives until 1500 s
    g.clock.advance(400);
    const swept = await sweepOnce(g.gw, { retentionMs: 30_000, auditRetentionMs: RETAIN_MS * 24 });
    expect({ tokens: swept.tokens, refresh_tokens: swept.refresh_tokens, grants: swept.grants }).toEqual({ tokens: 3, refresh_tokens: 0, grants: 0 });
    expect(await g.gw.store.getGrant(grantId)).not.toBeNull();
    const last = await rotated(h, rt);
    expect(await door.use(last.access)).toBe(200);
    g.clock.advance(TTL_S + RETAIN_MS / 1000);
    expect((await sweepOnce(g.gw, { retentionMs: RETAIN_MS, auditRetentionMs: RETAIN_MS * 24 })).refresh_tokens).toBe(4);
    expect(await g.gw.store.getRefreshToken(hashSecret(last.refresh))).toBeNull();
    door.expectRefused(await door.refresh(h, last.refresh), "unknown");
  });
});

describe("the two doors keep to their own clients", () => {
  test("an agent's refresh token is unknown at /oauth/token and an MCP client's at /ath/token; both stay usable at their own door", async () => {
    const agents = agentDoor(net(), () => g.clock.now());
    const mcp = mcpDoor(net());
    const a = await agents.start();
    const m = await mcp.start();
    mcp.expectRefused(await mcp.refresh(m, a.refresh), "unknown");
    agents.expectRefused(await agents.refresh(a, m.refresh), "unknown");
    expect([await active(a.access), await active(m.access)]).toEqual([true, true]);
    expect(agents.tokens(await agents.refresh(a, a.refresh)).access).toStartWith("ath_tk_");
    expect(mcp.tokens(await mcp.refresh(m, m.refresh)).access).toStartWith("ath_tk_");
  });
});
