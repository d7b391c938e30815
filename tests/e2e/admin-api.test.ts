/**
 * The admin API for tokens, audit and agent removal (DESIGN §9), over real HTTP (the gateway served on a port) on
 * SQLite and on PostgreSQL: every filter and state, keyset pages (exact boundaries, rows inserted between pages, bad
 * cursors), revocation by each selector — the proxy refusing the token at once and the provider told — and 401 on
 * every admin endpoint without or with a wrong token.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { authorize, call, exchange, consent, registeredAgent, type ClientCredentials } from "../helpers/agent.ts";
import { type TestAgent } from "../helpers/attestations.ts";
import { Browser } from "../helpers/browser.ts";
import { expectError } from "../helpers/expect-error.ts";
import { rawRequest } from "../helpers/raw-http.ts";
import { ADMIN_TOKEN, scriptedGateway, type InProcess } from "../helpers/in-process.ts";
import type { ScriptedProvider } from "../helpers/scripted-provider.ts";
import { PG_URL, postgresHarness, sqliteHarness, type Harness } from "../helpers/store-harness.ts";


interface Issued {
  agent: TestAgent;
  client: ClientCredentials;
  provider_id: string;
  user: Browser;
  accessToken: string;
  token_id: string;
  user_id: string;
}

for (const [kind, harness] of [
  ["SQLite", () => sqliteHarness()],
  ...(PG_URL ? [["PostgreSQL", () => postgresHarness(PG_URL)] as const] : []),
] as const) {
  describe(`admin API over HTTP — ${kind}`, () => {
    let h: Harness;
    let g: InProcess;
    let p: ScriptedProvider;
    let server: ReturnType<typeof Bun.serve>;
    let base: string;
    /** Two agents (A: mail+files, B: mail), two people; tokens issued one second apart, oldest first. */
    let A: { agent: TestAgent; client: ClientCredentials };
    let B: { agent: TestAgent; client: ClientCredentials };
    let alice: Browser;
    let bob: Browser;
    let tokens: Issued[];

    const admin = { "x-ath-user-token": ADMIN_TOKEN };
    const get = (path: string, headers: Record<string, string> = admin) => call(`${base}${path}`, { headers });
    const post = (path: string, json: unknown, headers: Record<string, string> = admin) => call(`${base}${path}`, { json, headers });
    const proxied = (t: Issued) =>
      call(`${base}/ath/proxy/${t.provider_id}/messages`, { headers: { authorization: `Bearer ${t.accessToken}` } });
    const ids = (r: { json: Record<string, unknown> }) => (r.json.tokens as { token_id: string }[]).map((t) => t.token_id);
    /** Token ids newest first, like the API lists them. */
    const newestFirst = (list: Issued[]) => list.map((t) => t.token_id).reverse();

    async function issue(who: { agent: TestAgent; client: ClientCredentials }, provider_id: string, user: Browser): Promise<Issued> {
      g.clock.advance(1);
      const scopes = ["mail:read"];
      const authz = await authorize(g, who.agent, who.client, { provider_id, scopes });
      const consented = await consent(String(authz.json.authorization_url), { browser: user });
      const token = await exchange(g, who.agent, who.client, { code: consented.code!, ath_session_id: String(authz.json.ath_session_id) });
      expect(token.status).toBe(200);
      const accessToken = String(token.json.access_token);
      const listed = await get(`/ath/admin/tokens?client_id=${who.client.client_id}&provider_id=${provider_id}&limit=1`);
      const row = (listed.json.tokens as Record<string, string>[])[0]!;
      return { ...who, provider_id, user, accessToken, token_id: row.token_id!, user_id: row.user_id! };
    }

    beforeEach(async () => {
      h = harness();
      ({ g, p } = await scriptedGateway((p) => ({ mail: p.config(), files: p.config({ display_name: "Files" }) }), { store: await h.open() }));
      server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: (req, srv) => g.app.fetch(req, srv.requestIP(req)?.address) });
      base = `http://127.0.0.1:${server.port}`;
      const providers = [
        { provider_id: "mail", scopes: ["mail:read"] },
        { provider_id: "files", scopes: ["mail:read"] },
      ];
      A = await registeredAgent(g, { providers });
      B = await registeredAgent(g, { providers: [providers[0]!] });
      alice = new Browser(g.fetch);
      bob = new Browser(g.fetch);
      tokens = [];
      tokens.push(await issue(A, "mail", alice)); // 0
      tokens.push(await issue(A, "mail", bob)); // 1
      tokens.push(await issue(A, "files", alice)); // 2
      tokens.push(await issue(B, "mail", alice)); // 3
      tokens.push(await issue(B, "mail", bob)); // 4
    });
    afterEach(async () => {
      server.stop(true);
      await g.close();
      await h.dispose();
    });

    describe("GET /ath/admin/tokens", () => {
      test("lists every token newest first with its public id, never a secret or hash", async () => {
        const r = await get("/ath/admin/tokens");
        expect(r.status).toBe(200);
        expect(ids(r)).toEqual(newestFirst(tokens));
        expect(r.json.next_cursor).toBeNull();
        const first = (r.json.tokens as Record<string, unknown>[])[0]!;
        expect(Object.keys(first).sort()).toEqual(
          ["agent_id", "client_id", "created_at", "expires_at", "provider_id", "revoked_at", "scopes", "token_id", "user_id"].sort(),
        );
        expect(first).toMatchObject({ client_id: B.client.client_id, agent_id: B.agent.agentId, provider_id: "mail", scopes: ["mail:read"], revoked_at: null });
        expect(String(first.created_at)).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
        expect(new Set(tokens.map((t) => t.token_id)).size).toBe(5);
        for (const t of tokens) {
          expect(t.token_id).toMatch(/^ath_tkid_/);
          expect(r.text).not.toContain(t.accessToken);
        }
        expect(r.text).not.toContain("hash");
        expect(alice).not.toBe(bob);
        expect(tokens[0]!.user_id).not.toBe(tokens[1]!.user_id);
      });

      test("each filter, and filters together (AND)", async () => {
        const expectIds = async (q: string, want: Issued[]) => expect(ids(await get(`/ath/admin/tokens?${q}`))).toEqual(newestFirst(want));
        const [t0, t1, t2, t3, t4] = tokens as [Issued, Issued, Issued, Issued, Issued];
        await expectIds(`client_id=${A.client.client_id}`, [t0, t1, t2]);
        await expectIds(`agent_id=${encodeURIComponent(B.agent.agentId)}`, [t3, t4]);
        await expectIds(`user_id=${encodeURIComponent(t0.user_id)}`, [t0, t2, t3]);
        await expectIds(`user_id=${encodeURIComponent(t1.user_id)}`, [t1, t4]);
        await expectIds("provider_id=files", [t2]);
        await expectIds(`token_id=${t3.token_id}`, [t3]);
        await expectIds(`client_id=${A.client.client_id}&provider_id=mail&user_id=${encodeURIComponent(t1.user_id)}`, [t1]);
        await expectIds(`client_id=${B.client.client_id}&provider_id=files`, []);
        // an empty value is no filter (the console's forms send every field)
        await expectIds("client_id=&provider_id=files", [t2]);
      });

      test("state: active, revoked, expired", async () => {
        expect((await post("/ath/admin/tokens/revoke", { token_id: tokens[1]!.token_id })).json).toEqual({ revoked: 1 });
        expect(ids(await get("/ath/admin/tokens?state=revoked"))).toEqual([tokens[1]!.token_id]);
        expect(ids(await get("/ath/admin/tokens?state=active"))).toEqual(newestFirst([tokens[0]!, tokens[2]!, tokens[3]!, tokens[4]!]));
        expect(ids(await get("/ath/admin/tokens?state=expired"))).toEqual([]);
        g.clock.advance(3600 - 2); // tokens 0..2 are past their hour, 3 and 4 are not
        expect(ids(await get("/ath/admin/tokens?state=expired"))).toEqual(newestFirst([tokens[0]!, tokens[2]!]));
        expect(ids(await get("/ath/admin/tokens?state=active"))).toEqual(newestFirst([tokens[3]!, tokens[4]!]));
        const revoked = (await get("/ath/admin/tokens?state=revoked")).json.tokens as { revoked_at: string }[];
        expect(revoked[0]!.revoked_at).toMatch(/Z$/);
      });

      test("pages: exact boundaries, the last page's next_cursor is null, and a cursor carries the filters it is used with", async () => {
        const all = newestFirst(tokens);
        const walk = async (limit: number, q = "") => {
          const pages: string[][] = [];
          let cursor: string | null = null;
          do {
            const r = await get(`/ath/admin/tokens?limit=${limit}${q}${cursor ? `&cursor=${cursor}` : ""}`);
            expect(r.status).toBe(200);
            pages.push(ids(r));
            cursor = r.json.next_cursor as string | null;
          } while (cursor !== null);
          return pages;
        };
        expect(await walk(5)).toEqual([all]);
        expect(await walk(500)).toEqual([all]);
        expect(await walk(4)).toEqual([all.slice(0, 4), all.slice(4)]);
        expect(await walk(1)).toEqual(all.map((id) => [id]));
        expect(await walk(2, `&client_id=${A.client.client_id}`)).toEqual([
          [tokens[2]!.token_id, tokens[1]!.token_id],
          [tokens[0]!.token_id],
        ]);
      });

      test("rows inserted between pages neither repeat nor hide the rows that were there", async () => {
        const first = await get("/ath/admin/tokens?limit=2");
        expect(ids(first)).toEqual(newestFirst(tokens).slice(0, 2));
        const late = await issue(B, "mail", bob);
        const late2 = await issue(A, "files", bob);
        const second = await get(`/ath/admin/tokens?limit=2&cursor=${first.json.next_cursor}`);
        const third = await get(`/ath/admin/tokens?limit=2&cursor=${second.json.next_cursor}`);
        expect([...ids(first), ...ids(second), ...ids(third)]).toEqual(newestFirst(tokens));
        expect(third.json.next_cursor).toBeNull();
        // a fresh walk starts with them
        expect(ids(await get("/ath/admin/tokens?limit=2"))).toEqual([late2.token_id, late.token_id]);
      });

      test("a bad cursor, limit, state or parameter is 400 INVALID_REQUEST naming it", async () => {
        const bad = async (q: string, field: string) => {
          const r = await get(`/ath/admin/tokens?${q}`);
          expectError(r, "INVALID_REQUEST", { field });
        };
        await bad("cursor=nonsense!", "cursor");
        await bad(`cursor=${Buffer.from('{"c":"x","i":1}').toString("base64url")}`, "cursor");
        await bad(`cursor=${Buffer.from("[1,2]").toString("base64url")}`, "cursor");
        await bad("cursor=eyJpZCI6M30", "cursor"); // an audit cursor
        await bad("limit=0", "limit");
        await bad("limit=501", "limit");
        await bad("limit=ten", "limit");
        await bad("state=alive", "state");
        await bad("agentid=x", "agentid");
        await bad("client_id=a&client_id=b", "client_id");
        await bad("user_id=%00", "user_id");
      });
    });

    describe("POST /ath/admin/tokens/revoke", () => {
      const selectors: [string, (t: Issued[]) => { body: Record<string, string>; hit: number[] }][] = [
        ["token_id", (t) => ({ body: { token_id: t[3]!.token_id }, hit: [3] })],
        ["client_id", (t) => ({ body: { client_id: t[0]!.client.client_id }, hit: [0, 1, 2] })],
        ["agent_id", (t) => ({ body: { agent_id: t[3]!.agent.agentId }, hit: [3, 4] })],
        ["user_id", (t) => ({ body: { user_id: t[1]!.user_id }, hit: [1, 4] })],
        ["provider_id", () => ({ body: { provider_id: "files" }, hit: [2] })],
        ["client_id AND provider_id AND user_id", (t) => ({ body: { client_id: t[0]!.client.client_id, provider_id: "mail", user_id: t[0]!.user_id }, hit: [0] })],
      ];
      for (const [name, select] of selectors) {
        test(`by ${name}: those tokens and only those stop working at the proxy at once, and the provider is told`, async () => {
          for (const t of tokens) expect((await proxied(t)).status).toBe(200);
          const { body, hit } = select(tokens);
          const revocationsBefore = p.revocations.length;
          const r = await post("/ath/admin/tokens/revoke", body);
          expect(r.status).toBe(200);
          expect(r.json).toEqual({ revoked: hit.length });
          for (const [i, t] of tokens.entries()) {
            const res = await proxied(t);
            if (hit.includes(i)) expectError(res, "TOKEN_REVOKED");
            else expect(res.status).toBe(200);
          }
          // each revoked token's upstream grant was revoked at the provider (access and refresh token)
          const told = p.revocations.slice(revocationsBefore).map((x) => x.form.token);
          expect(told.length).toBeGreaterThanOrEqual(hit.length);
          expect(ids(await get("/ath/admin/tokens?state=revoked"))).toEqual(newestFirst(hit.map((i) => tokens[i]!)));
          // each is audited with its token_id, by admin
          const events = (await get("/ath/admin/audit?type=token.revoked")).json.events as { data: { token_id: string; by: string } }[];
          expect(events.map((e) => e.data.token_id).sort()).toEqual(hit.map((i) => tokens[i]!.token_id).sort());
          expect(events.every((e) => e.data.by === "admin")).toBe(true);
          // again: nothing left to revoke
          expect((await post("/ath/admin/tokens/revoke", body)).json).toEqual({ revoked: 0 });
        });
      }

      test("an empty selector, an unknown field or a non-JSON body is 400 and revokes nothing", async () => {
        expectError(await post("/ath/admin/tokens/revoke", {}), "INVALID_REQUEST");
        expectError(await post("/ath/admin/tokens/revoke", { tokenid: tokens[0]!.token_id }), "INVALID_REQUEST");
        expectError(await post("/ath/admin/tokens/revoke", { client_id: "" }), "INVALID_REQUEST");
        expectError(await post("/ath/admin/tokens/revoke", { client_id: 7 }), "INVALID_REQUEST");
        expectError(await call(`${base}/ath/admin/tokens/revoke`, { body: "client_id=x", headers: { ...admin, "content-type": "text/plain" } }), "INVALID_REQUEST");
        expect(ids(await get("/ath/admin/tokens?state=active"))).toHaveLength(5);
      });

      test("a token_id is not a bearer token", async () => {
        const r = await call(`${base}/ath/proxy/mail/messages`, { headers: { authorization: `Bearer ${tokens[0]!.token_id}` } });
        expectError(r, "TOKEN_INVALID");
      });
    });

    describe("DELETE /ath/admin/agents/{client_id}", () => {
      test("revokes its tokens (the proxy refuses them at once, the provider is told), then removes it", async () => {
        const before = p.revocations.length;
        const r = await call(`${base}/ath/admin/agents/${B.client.client_id}`, { method: "DELETE", headers: admin });
        expect(r.status).toBe(200);
        expect(r.json).toMatchObject({ client_id: B.client.client_id, deleted: true, tokens_revoked: 2 });
        expect(p.revocations.length).toBeGreaterThan(before);
        for (const t of tokens.slice(3)) expect((await proxied(t)).status).toBe(401);
        for (const t of tokens.slice(0, 3)) expect((await proxied(t)).status).toBe(200);
        expectError(await get(`/ath/admin/agents/${B.client.client_id}`), "NOT_FOUND");
        expect(ids(await get(`/ath/admin/tokens?client_id=${B.client.client_id}`))).toEqual([]);
        const events = (await get(`/ath/admin/audit?type=agent.deleted`)).json.events as Record<string, unknown>[];
        expect(events).toHaveLength(1);
        expect(events[0]).toMatchObject({ client_id: B.client.client_id, agent_id: B.agent.agentId, data: { by: "admin", tokens_revoked: 2 } });
        // it can register again as a new agent
        expect((await registeredAgent(g, { agent: B.agent, providers: [{ provider_id: "mail", scopes: ["mail:read"] }] })).client.client_id).not.toBe(B.client.client_id);
        expectError(await call(`${base}/ath/admin/agents/${B.client.client_id}`, { method: "DELETE", headers: admin }), "NOT_FOUND");
      });
    });

    describe("GET /ath/admin/audit", () => {
      test("events newest first, each filter, since/until, pages by cursor — and no secret anywhere", async () => {
        const all = await get("/ath/admin/audit?limit=500");
        expect(all.status).toBe(200);
        const events = all.json.events as { id: number; type: string; at: string; client_id: string | null; agent_id: string | null; user_id: string | null; provider_id: string | null; data: unknown }[];
        expect(events.length).toBeGreaterThan(10);
        expect(Object.keys(events[0]!).sort()).toEqual(["agent_id", "at", "client_id", "data", "id", "provider_id", "type", "user_id"]);
        const idsDesc = events.map((e) => e.id);
        expect(idsDesc).toEqual([...idsDesc].sort((a, b) => b - a));
        for (const t of tokens) {
          expect(all.text).not.toContain(t.accessToken);
          expect(all.text).not.toContain(t.client.client_secret);
        }
        const issued = (await get("/ath/admin/audit?type=token.issued")).json.events as typeof events;
        expect(issued).toHaveLength(5);
        const only = async (q: string, pick: (e: (typeof events)[number]) => boolean) => {
          const r = await get(`/ath/admin/audit?limit=500&${q}`);
          expect(r.status).toBe(200);
          expect((r.json.events as typeof events).map((e) => e.id)).toEqual(events.filter(pick).map((e) => e.id));
        };
        await only(`client_id=${A.client.client_id}`, (e) => e.client_id === A.client.client_id);
        await only(`agent_id=${encodeURIComponent(B.agent.agentId)}`, (e) => e.agent_id === B.agent.agentId);
        await only(`user_id=${encodeURIComponent(tokens[1]!.user_id)}`, (e) => e.user_id === tokens[1]!.user_id);
        await only("provider_id=files", (e) => e.provider_id === "files");
        await only("type=token.issued&provider_id=mail", (e) => e.type === "token.issued" && e.provider_id === "mail");
        // since is inclusive, until exclusive: the third token's second
        const third = issued.at(-3)!;
        await only(`since=${third.at}`, (e) => e.at >= third.at);
        await only(`until=${third.at}`, (e) => e.at < third.at);
        await only(`type=token.issued&since=${third.at}&until=${issued.at(-4)!.at}`, (e) => e.id === third.id);
        // pages
        const page1 = await get("/ath/admin/audit?limit=3");
        expect((page1.json.events as typeof events).map((e) => e.id)).toEqual(idsDesc.slice(0, 3));
        await issue(A, "mail", bob); // newer events arrive meanwhile
        const page2 = await get(`/ath/admin/audit?limit=3&cursor=${page1.json.next_cursor}`);
        expect((page2.json.events as typeof events).map((e) => e.id)).toEqual(idsDesc.slice(3, 6));
        const last = await get(`/ath/admin/audit?limit=${idsDesc.length}&cursor=${page2.json.next_cursor}`);
        expect((last.json.events as typeof events).map((e) => e.id)).toEqual(idsDesc.slice(6));
        expect(last.json.next_cursor).toBeNull();
      });

      test("bad since, until, limit, cursor or parameter is 400", async () => {
        for (const [q, field] of [
          ["since=yesterday", "since"],
          ["until=2026-13-45T00:00:00Z", "until"],
          ["limit=0", "limit"],
          ["cursor=abc", "cursor"],
          [`cursor=${Buffer.from('{"id":-1}').toString("base64url")}`, "cursor"],
          ["kind=x", "kind"],
        ] as const) {
          expectError(await get(`/ath/admin/audit?${q}`), "INVALID_REQUEST", { field });
        }
      });
    });

    test("every admin endpoint is 401 UNAUTHORIZED without the admin token or with a wrong one", async () => {
      const c = A.client.client_id;
      const endpoints: [string, string, unknown?][] = [
        ["GET", "/ath/admin/tokens"],
        ["POST", "/ath/admin/tokens/revoke", { client_id: c }],
        ["GET", "/ath/admin/audit"],
        ["GET", "/ath/admin/agents"],
        ["GET", `/ath/admin/agents/${c}`],
        ["PATCH", `/ath/admin/agents/${c}`, { status: "suspended" }],
        ["DELETE", `/ath/admin/agents/${c}`],
        ["GET", "/ath/admin/providers"],
        ["POST", "/ath/admin/providers", { provider_id: "x" }],
        ["GET", "/ath/admin/providers/mail"],
        ["PUT", "/ath/admin/providers/mail", {}],
        ["DELETE", "/ath/admin/providers/mail"],
      ];
      // Wrong tokens are limited per client IP (10 a minute, DESIGN §14): each wrong one comes from a loopback address
      // of its own, so this test sees the 401 of every endpoint (the limit has its own test, hardening-gateway).
      let from = 0;
      const port = Number(new URL(base).port);
      for (const [method, path, json] of endpoints) {
        for (const headers of [{}, { "x-ath-user-token": "wrong" }, { "x-ath-user-token": `${ADMIN_TOKEN}x` }, { authorization: `Bearer ${ADMIN_TOKEN}` }] as Record<string, string>[]) {
          const body = json === undefined ? "" : JSON.stringify(json);
          const raw = await rawRequest(port, method, path, { ...headers, ...(body ? { "content-type": "application/json" } : {}) }, body, `127.0.2.${++from}`);
          expectError({ status: raw.status, headers: new Headers(raw.headers), text: raw.body }, "UNAUTHORIZED");
        }
      }
      // nothing changed
      for (const t of tokens) expect((await proxied(t)).status).toBe(200);
      expect((await get(`/ath/admin/agents/${c}`)).json.agent_status).toBe("approved");
    });
  });
}
