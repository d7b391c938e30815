/**
 * One Store conformance suite, run against SQLite (temp file) and PostgreSQL (a fresh schema per test).
 * Time is passed explicitly; concurrency tests spread their callers over two store instances.
 * Set ATH_TEST_POSTGRES_URL to point elsewhere, or to "" to leave PostgreSQL out.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import type { ApprovalRecord, RefreshTokenRecord, Store } from "../../../src/store/types.ts";
import {
  type Harness, PG_URL, T0, agentFixture, grantFixture, postgresHarness, sessionFixture, sqliteHarness, tokenFixture,
} from "../../helpers/store-harness.ts";
import { migrations } from "../../../src/store/migrations.ts";
import { chainRecord, hashRecord, ZERO_HASH } from "../../../src/protocol/audit-chain.ts";

const SCHEMA_VERSION = String(migrations("sqlite").length);

storeConformance("SQLite", sqliteHarness);
if (PG_URL) storeConformance("PostgreSQL", () => postgresHarness(PG_URL));
else describe.skip("PostgreSQL (ATH_TEST_POSTGRES_URL is empty)", () => {});

function storeConformance(name: string, makeHarness: () => Harness) {
  describe(`Store conformance — ${name}`, () => {
    let h: Harness;
    let store: Store;
    beforeEach(async () => {
      h = makeHarness();
      store = await h.open();
    });
    afterEach(() => h.dispose());

    test("the schema version is recorded and reopening applies nothing twice", async () => {
      await store.setMeta("kept", "yes");
      await store.close();
      store = await h.open();
      expect(await store.getMeta("schema_version")).toBe(SCHEMA_VERSION);
      expect(await store.getMeta("kept")).toBe("yes");
    });

    test("instances starting together on a fresh database migrate it once", async () => {
      const fresh = makeHarness();
      try {
        const stores = await Promise.all(Array.from({ length: 4 }, () => fresh.open()));
        for (const s of stores) expect(await s.getMeta("schema_version")).toBe(SCHEMA_VERSION);
        expect(await fresh.count("audit")).toBe(0);
      } finally {
        await fresh.dispose();
      }
    });

    test("meta values are upserted by key", async () => {
      expect(await store.getMeta("admin_token_hash")).toBeNull();
      await store.setMeta("admin_token_hash", "h1");
      await store.setMeta("admin_token_hash", "h2");
      expect(await store.getMeta("admin_token_hash")).toBe("h2");
    });

    test("a provider is upserted by id, its config round-trips, and deletion reports whether it existed", async () => {
      const config = {
        display_name: "GitHub", available_scopes: ["repo"], authorize_endpoint: "https://gh.example/authorize",
        token_endpoint: "https://gh.example/token", client_id: "cid", client_secret: "",
        token_endpoint_auth_method: "client_secret_post" as const, consent_screen: true,
        scope_rules: { repo: ["GET /repos/**"] },
      };
      await store.upsertProvider({ provider_id: "github", config, client_secret_sealed: "s1", source: "file", updated_at: T0 });
      await store.upsertProvider({ provider_id: "github", config: { ...config, display_name: "GH" }, client_secret_sealed: "s2", source: "admin", updated_at: T0 + 1 });
      expect(await store.getProvider("github")).toEqual({
        provider_id: "github", config: { ...config, display_name: "GH" }, client_secret_sealed: "s2", source: "admin", updated_at: T0 + 1,
      });
      expect((await store.listProviders()).map((p) => p.provider_id)).toEqual(["github"]);
      expect(await store.deleteProvider("github")).toBe(true);
      expect(await store.deleteProvider("github")).toBe(false);
      expect(await store.getProvider("github")).toBeNull();
    });

    test("lockAgent holds the agent row until its transaction ends: a status change made meanwhile waits for it", async () => {
      const a = agentFixture();
      await store.createAgent(a);
      expect(await store.lockAgent("ath_cl_nobody")).toBeNull();
      const order: string[] = [];
      let locked: () => void = () => undefined;
      const isLocked = new Promise<void>((resolve) => (locked = resolve));
      const decision = store.transaction(async (tx) => {
        expect((await tx.lockAgent(a.client_id))?.status).toBe("approved");
        locked();
        await Bun.sleep(100);
        order.push("token issued");
      });
      await isLocked;
      const suspension = store.transaction(async (tx) => {
        await tx.lockAgent(a.client_id);
        await tx.updateAgent(a.client_id, { status: "suspended" });
        order.push("suspended");
      });
      await Promise.all([decision, suspension]);
      expect(order).toEqual(["token issued", "suspended"]);
    });

    test("an agent_id can be registered once", async () => {
      const first = agentFixture();
      expect(await store.createAgent(first)).toBe(true);
      const sameAgentId = agentFixture({ agent_id: first.agent_id, purpose: "impostor" });
      const [r1, r2] = await Promise.all([store.createAgent(sameAgentId), store.createAgent({ ...sameAgentId, client_id: "ath_cl_other" })]);
      expect([r1, r2]).toEqual([false, false]);
      expect(await store.createAgent(agentFixture({ client_id: first.client_id }))).toBe(false);
      expect(await store.getAgentByClientId(sameAgentId.client_id)).toBeNull();
      expect(await store.getAgentByAgentId(first.agent_id)).toEqual(first);
      expect(await h.count("agents")).toBe(1);
    });

    test("updateAgent changes only the given fields and is false for an unknown client", async () => {
      const a = agentFixture({ status: "pending" });
      await store.createAgent(a);
      expect(await store.updateAgent(a.client_id, { status: "approved" })).toBe(true);
      expect(await store.getAgentByClientId(a.client_id)).toEqual({ ...a, status: "approved" });
      expect(await store.updateAgent(a.client_id, { approvals: [], approval_expires: T0 + 5 })).toBe(true);
      expect(await store.getAgentByClientId(a.client_id)).toEqual({ ...a, status: "approved", approvals: [], approval_expires: T0 + 5 });
      expect(await store.updateAgent("ath_cl_nobody", { status: "suspended" })).toBe(false);
      expect((await store.listAgents()).map((x) => x.client_id)).toEqual([a.client_id]);
    });

    test("quotes, SQL comments, NUL (SQLite) and unicode in stored fields round-trip unchanged and leave the tables intact", async () => {
      // PostgreSQL text cannot hold U+0000 at all: the gateway must refuse it before it reaches that store
      const nul = name === "SQLite" ? "\u0000" : "";
      const hostile = `x'); DROP TABLE agents; -- ${nul} ' OR '1'='1 \u202e`;
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
    });

    test("a jti is accepted once until it expires", async () => {
      expect(await store.recordJti("agent-a", "jti-1", T0 + 60_000, T0)).toBe(true);
      expect(await store.recordJti("agent-a", "jti-1", T0 + 60_000, T0 + 1)).toBe(false);
      expect(await store.recordJti("agent-a", "jti-1", T0 + 120_000, T0 + 59_999)).toBe(false);
      expect(await store.recordJti("agent-b", "jti-1", T0 + 60_000, T0)).toBe(true);
      // expired: may be recorded again, and is then unexpired again
      expect(await store.recordJti("agent-a", "jti-1", T0 + 120_000, T0 + 60_000)).toBe(true);
      expect(await store.recordJti("agent-a", "jti-1", T0 + 180_000, T0 + 60_001)).toBe(false);
    });

    test("a jti is accepted by exactly one of 10 concurrent recorders", async () => {
      const other = await h.open();
      const results = await Promise.all(
        Array.from({ length: 10 }, (_, i) => (i % 2 ? other : store).recordJti("agent-a", "jti-race", T0 + 60_000, T0)),
      );
      expect(results.filter(Boolean)).toHaveLength(1);
    });

    describe("sessions", () => {
      test("a session is found by id, handle and upstream state", async () => {
        const a = agentFixture();
        await store.createAgent(a);
        const s = sessionFixture(a, { user_redirect_uri: "http://127.0.0.1:9999/cb", resource: "https://api.example" });
        await store.createSession(s);
        expect(await store.getSession(s.session_id)).toEqual(s);
        expect(await store.getSessionByHandle(s.handle)).toEqual(s);
        expect(await store.getSessionByUpstreamState(s.upstream_state)).toEqual(s);
        expect(await store.getSession("nope")).toBeNull();
      });

      test("the first browser to open a pending session binds it", async () => {
        const a = agentFixture();
        await store.createAgent(a);
        const s = sessionFixture(a);
        await store.createSession(s);
        expect(await store.bindSession(s.session_id, "browser-1")).toBe(true);
        expect(await store.bindSession(s.session_id, "browser-1")).toBe(true);
        expect(await store.bindSession(s.session_id, "browser-2")).toBe(false);
        expect((await store.getSession(s.session_id))?.binding_hash).toBe("browser-1");
        await store.markSessionDenied(s.session_id);
        expect(await store.bindSession(s.session_id, "browser-1")).toBe(false);
      });

      test("only a pending session can be consented or denied", async () => {
        const a = agentFixture();
        await store.createAgent(a);
        const s = sessionFixture(a);
        await store.createSession(s);
        const consent = { code_hash: "c".repeat(64), user_id: "user-1", consented_scopes: ["repo"], grant_id: "g-1", expires_at: T0 + 300_000 };
        expect(await store.markSessionConsented(s.session_id, consent)).toBe(true);
        expect(await store.markSessionConsented(s.session_id, { ...consent, user_id: "user-2" })).toBe(false);
        expect(await store.markSessionDenied(s.session_id)).toBe(false);
        expect(await store.getSession(s.session_id)).toEqual({ ...s, ...consent, status: "consented" });

        const d = sessionFixture(a);
        await store.createSession(d);
        expect(await store.markSessionDenied(d.session_id)).toBe(true);
        expect(await store.markSessionConsented(d.session_id, consent)).toBe(false);
        expect((await store.getSession(d.session_id))?.status).toBe("denied");
      });

      test("a session is consumed exactly once under 20 concurrent consumers", async () => {
        const a = agentFixture();
        await store.createAgent(a);
        const s = sessionFixture(a);
        await store.createSession(s);
        const consent = { code_hash: "c".repeat(64), user_id: "user-1", consented_scopes: ["repo"], grant_id: "g-1", expires_at: T0 + 300_000 };
        await store.markSessionConsented(s.session_id, consent);
        const other = await h.open();
        const results = await Promise.all(
          Array.from({ length: 20 }, (_, i) => (i % 2 ? other : store).consumeSession(s.session_id, a.client_id, T0 + 1)),
        );
        const winners = results.filter((r) => r !== null);
        expect(winners).toEqual([{ ...s, ...consent, status: "consented" }]);
        expect((await store.getSession(s.session_id))?.status).toBe("used");
      });

      test("a session is consumed only by its client, only when consented, and only before it expires", async () => {
        const a = agentFixture();
        await store.createAgent(a);
        const s = sessionFixture(a);
        await store.createSession(s);
        expect(await store.consumeSession(s.session_id, a.client_id, T0 + 1)).toBeNull(); // still pending
        await store.markSessionConsented(s.session_id, { code_hash: "c", user_id: "u", consented_scopes: [], grant_id: "g", expires_at: T0 + 1000 });
        expect(await store.consumeSession(s.session_id, "ath_cl_other", T0 + 1)).toBeNull();
        expect(await store.consumeSession(s.session_id, a.client_id, T0 + 1000)).toBeNull(); // expired
        expect((await store.getSession(s.session_id))?.status).toBe("consented"); // nothing written by the misses
        expect(await store.consumeSession(s.session_id, a.client_id, T0 + 999)).not.toBeNull();
      });
    });

    describe("tokens", () => {
      test("revocation keeps the first revocation time and unknown tokens give null", async () => {
        const a = agentFixture();
        await store.createAgent(a);
        const t = tokenFixture(a, { grant_id: "g-1" });
        await store.createToken(t);
        expect(await store.getToken(t.token_hash)).toEqual(t);
        expect(await store.revokeToken(t.token_hash, T0 + 10)).toEqual({ ...t, revoked_at: T0 + 10 });
        expect(await store.revokeToken(t.token_hash, T0 + 20)).toEqual({ ...t, revoked_at: T0 + 10 });
        expect(await store.revokeToken("unknown", T0)).toBeNull();
      });

      test("revokeTokensOfClient revokes only the live tokens of that client and provider", async () => {
        const a = agentFixture();
        const b = agentFixture();
        await store.createAgent(a);
        await store.createAgent(b);
        const gh = tokenFixture(a);
        const slack = tokenFixture(a, { provider_id: "slack" });
        const expired = tokenFixture(a, { expires_at: T0 + 5 });
        const revoked = tokenFixture(a, { revoked_at: T0 + 1 });
        const others = tokenFixture(b);
        for (const t of [gh, slack, expired, revoked, others]) await store.createToken(t);
        expect(await store.revokeTokensOfClient(a.client_id, T0 + 10, "github")).toBe(1);
        expect((await store.getToken(slack.token_hash))?.revoked_at).toBeNull();
        expect(await store.revokeTokensOfClient(a.client_id, T0 + 20)).toBe(1);
        expect((await store.getToken(gh.token_hash))?.revoked_at).toBe(T0 + 10);
        expect((await store.getToken(slack.token_hash))?.revoked_at).toBe(T0 + 20);
        expect((await store.getToken(expired.token_hash))?.revoked_at).toBeNull();
        expect((await store.getToken(revoked.token_hash))?.revoked_at).toBe(T0 + 1);
        expect((await store.getToken(others.token_hash))?.revoked_at).toBeNull();
      });

      test("revocation persists across reopen", async () => {
        const a = agentFixture();
        await store.createAgent(a);
        const t = tokenFixture(a);
        await store.createToken(t);
        await store.revokeToken(t.token_hash, T0 + 10);
        await store.close();
        store = await h.open();
        expect(await store.getToken(t.token_hash)).toEqual({ ...t, revoked_at: T0 + 10 });
      });

      test("listTokens: filters ANDed, state at `now`, newest first by (created_at, token_id), keyset after a row", async () => {
        const a = agentFixture();
        const b = agentFixture();
        await store.createAgent(a);
        await store.createAgent(b);
        const t1 = tokenFixture(a, { token_id: "ath_tkid_a", created_at: T0 + 1 });
        const t2 = tokenFixture(a, { token_id: "ath_tkid_b", created_at: T0 + 2, provider_id: "slack", user_id: "user-2" });
        const t3 = tokenFixture(b, { token_id: "ath_tkid_c", created_at: T0 + 2, expires_at: T0 + 5 });
        const t4 = tokenFixture(b, { token_id: "ath_tkid_d", created_at: T0 + 3, revoked_at: T0 + 4 });
        for (const t of [t1, t2, t3, t4]) await store.createToken(t);
        const ids = async (f: Parameters<Store["listTokens"]>[0], o: Partial<Parameters<Store["listTokens"]>[1]> = {}) =>
          (await store.listTokens(f, { now: T0 + 10, limit: 10, ...o })).map((t) => t.token_id);
        expect(await ids({})).toEqual(["ath_tkid_d", "ath_tkid_c", "ath_tkid_b", "ath_tkid_a"]);
        expect(await ids({ client_id: a.client_id })).toEqual(["ath_tkid_b", "ath_tkid_a"]);
        expect(await ids({ agent_id: b.agent_id })).toEqual(["ath_tkid_d", "ath_tkid_c"]);
        expect(await ids({ user_id: "user-2" })).toEqual(["ath_tkid_b"]);
        expect(await ids({ provider_id: "github", client_id: b.client_id })).toEqual(["ath_tkid_d", "ath_tkid_c"]);
        expect(await ids({ token_id: "ath_tkid_a" })).toEqual(["ath_tkid_a"]);
        expect(await ids({}, { state: "active" })).toEqual(["ath_tkid_b", "ath_tkid_a"]);
        expect(await ids({}, { state: "revoked" })).toEqual(["ath_tkid_d"]);
        expect(await ids({}, { state: "expired" })).toEqual(["ath_tkid_c"]);
        expect(await ids({}, { state: "active", now: T0 })).toEqual(["ath_tkid_c", "ath_tkid_b", "ath_tkid_a"]);
        expect(await ids({}, { limit: 2 })).toEqual(["ath_tkid_d", "ath_tkid_c"]);
        // after c (same created_at as b): b comes next, by token_id
        expect(await ids({}, { after: { created_at: T0 + 2, token_id: "ath_tkid_c" } })).toEqual(["ath_tkid_b", "ath_tkid_a"]);
        expect(await store.countTokens(T0 + 10)).toEqual({ active: 2, revoked: 1, expired: 1 });
      });

      test("revokeTokensWhere revokes the live matching tokens once, returning them; token_id is unique", async () => {
        const a = agentFixture();
        await store.createAgent(a);
        const live = tokenFixture(a, { user_id: "u" });
        const other = tokenFixture(a, { user_id: "v" });
        const expired = tokenFixture(a, { user_id: "u", expires_at: T0 + 1 });
        for (const t of [live, other, expired]) await store.createToken(t);
        const revoked = await store.revokeTokensWhere({ client_id: a.client_id, user_id: "u" }, T0 + 10);
        expect(revoked).toEqual([{ ...live, revoked_at: T0 + 10 }]);
        expect(await store.revokeTokensWhere({ user_id: "u" }, T0 + 20)).toEqual([]);
        expect((await store.getToken(other.token_hash))?.revoked_at).toBeNull();
        await expect(store.revokeTokensWhere({}, T0)).rejects.toThrow();
        await expect(store.createToken(tokenFixture(a, { token_id: live.token_id }))).rejects.toThrow();
      });

      test("deleteAgent removes the agent with its sessions and tokens", async () => {
        const a = agentFixture();
        await store.createAgent(a);
        const t = tokenFixture(a);
        await store.createToken(t);
        await store.createSession(sessionFixture(a));
        expect(await store.deleteAgent(a.client_id)).toBe(true);
        expect(await store.getAgentByClientId(a.client_id)).toBeNull();
        expect(await store.getToken(t.token_hash)).toBeNull();
        expect(await h.count("sessions")).toBe(0);
        expect(await store.deleteAgent(a.client_id)).toBe(false);
      });
    });

    test("console sessions: found until they expire, deleted on demand, expired ones dropped by the next sign-in", async () => {
      await store.createConsoleSession({ id_hash: "s1", created_at: T0, expires_at: T0 + 100 });
      expect(await store.getConsoleSession("s1", T0 + 99)).toEqual({ id_hash: "s1", created_at: T0, expires_at: T0 + 100 });
      expect(await store.getConsoleSession("s1", T0 + 100)).toBeNull();
      expect(await store.getConsoleSession("nope", T0)).toBeNull();
      await store.createConsoleSession({ id_hash: "s2", created_at: T0 + 200, expires_at: T0 + 300 });
      expect(await h.count("console_sessions")).toBe(1);
      await store.deleteConsoleSession("s2");
      expect(await store.getConsoleSession("s2", T0 + 201)).toBeNull();
    });

    test("listAudit filters by every field and time (since inclusive, until exclusive) and pages before an id", async () => {
      await store.appendAudit(
        { type: "agent.registered", at: T0, client_id: "c1", agent_id: "a1" },
        { type: "token.issued", at: T0 + 10, client_id: "c1", agent_id: "a1", provider_id: "gh", user_id: "u1" },
        { type: "token.issued", at: T0 + 20, client_id: "c2", agent_id: "a2", provider_id: "sl", user_id: "u2" },
      );
      const at = async (o: Parameters<Store["listAudit"]>[0]) => (await store.listAudit(o)).map((e) => e.at - T0);
      expect(await at({})).toEqual([20, 10, 0]);
      expect(await at({ type: "token.issued" })).toEqual([20, 10]);
      expect(await at({ client_id: "c1" })).toEqual([10, 0]);
      expect(await at({ agent_id: "a2" })).toEqual([20]);
      expect(await at({ user_id: "u1" })).toEqual([10]);
      expect(await at({ provider_id: "sl" })).toEqual([20]);
      expect(await at({ since: T0 + 10 })).toEqual([20, 10]);
      expect(await at({ until: T0 + 10 })).toEqual([0]);
      const [newest] = await store.listAudit({ limit: 1 });
      expect(await at({ beforeId: newest!.id! })).toEqual([10, 0]);
    });

    describe("refresh families (DESIGN §17)", () => {
      const refreshFixture = (a: ReturnType<typeof agentFixture>, family_id: string, over: Partial<RefreshTokenRecord> = {}): RefreshTokenRecord => ({
        refresh_hash: `rt-${crypto.randomUUID()}`, family_id, client_id: a.client_id, oauth_client_id: null, resource: null, agent_id: a.agent_id, user_id: "user-1",
        provider_id: "github", scopes: ["repo"], grant_id: "g-1", jkt: null, family_expires_at: T0 + 86_400_000,
        expires_at: T0 + 3_600_000, created_at: T0, spent_at: null, revoked_at: null, ...over,
      });

      test("a refresh token round-trips, and of 12 racing spends over two instances exactly one gets it", async () => {
        const a = agentFixture();
        await store.createAgent(a);
        const rt = refreshFixture(a, "fam-1", { jkt: "thumb" });
        await store.createRefreshToken(rt);
        expect(await store.getRefreshToken(rt.refresh_hash)).toEqual(rt);
        expect(await store.getRefreshToken("unknown")).toBeNull();
        const other = await h.open();
        try {
          const spends = await Promise.all(Array.from({ length: 12 }, (_, i) => (i % 2 ? other : store).spendRefreshToken(rt.refresh_hash, T0 + 5)));
          expect(spends.filter((s) => s !== null)).toEqual([{ ...rt, spent_at: T0 + 5 }]);
        } finally {
          await other.close();
        }
        expect((await store.getRefreshToken(rt.refresh_hash))?.spent_at).toBe(T0 + 5);
      });

      test("an MCP client's refresh token is a row of the same table: its OAuth client_id and resource round-trip, it spends once, and it goes with the agent record", async () => {
        const a = agentFixture({ client_id: "mcp_client-1", agent_id: "mcp:mcp_client-1" });
        await store.createAgent(a);
        const rt = refreshFixture(a, "fam-mcp", { oauth_client_id: "https://app.example/client.json", resource: "https://gw.example/mcp/mail" });
        await store.createRefreshToken(rt);
        expect(await store.getRefreshToken(rt.refresh_hash)).toEqual(rt);
        expect(await store.spendRefreshToken(rt.refresh_hash, T0 + 5)).toEqual({ ...rt, spent_at: T0 + 5 });
        expect(await store.spendRefreshToken(rt.refresh_hash, T0 + 6)).toBeNull();
        expect(await store.deleteAgent(a.client_id)).toBe(true);
        expect(await store.getRefreshToken(rt.refresh_hash)).toBeNull();
      });

      test("revokeRefreshFamily revokes the family's refresh tokens and live access tokens, nothing of another family", async () => {
        const a = agentFixture();
        await store.createAgent(a);
        const [r1, r2, other] = [refreshFixture(a, "fam-a"), refreshFixture(a, "fam-a"), refreshFixture(a, "fam-b")];
        for (const r of [r1, r2, other]) await store.createRefreshToken(r);
        const [t1, t2, tb] = [tokenFixture(a, { family_id: "fam-a" }), tokenFixture(a, { family_id: "fam-a" }), tokenFixture(a, { family_id: "fam-b" })];
        for (const t of [t1, t2, tb]) await store.createToken(t);
        const revoked = await store.revokeRefreshFamily("fam-a", T0 + 10);
        expect(revoked.map((t) => t.token_hash).sort()).toEqual([t1.token_hash, t2.token_hash].sort());
        expect((await store.getRefreshToken(r2.refresh_hash))?.revoked_at).toBe(T0 + 10);
        expect(await store.spendRefreshToken(r1.refresh_hash, T0 + 11)).toBeNull();
        expect((await store.getRefreshToken(other.refresh_hash))?.revoked_at).toBeNull();
        expect((await store.getToken(tb.token_hash))?.revoked_at).toBeNull();
      });

      test("revokeTokensWhere kills the families of what it matches (by client, or through one token_id) with their other access tokens", async () => {
        const a = agentFixture();
        const b = agentFixture();
        await store.createAgent(a);
        await store.createAgent(b);
        const ra = refreshFixture(a, "fam-a");
        const rb = refreshFixture(b, "fam-b");
        await store.createRefreshToken(ra);
        await store.createRefreshToken(rb);
        const [old, current, bt] = [tokenFixture(a, { family_id: "fam-a" }), tokenFixture(a, { family_id: "fam-a" }), tokenFixture(b, { family_id: "fam-b" })];
        for (const t of [old, current, bt]) await store.createToken(t);
        const byId = await store.revokeTokensWhere({ token_id: old.token_id }, T0 + 10);
        expect(byId.map((t) => t.token_hash).sort()).toEqual([old.token_hash, current.token_hash].sort());
        expect((await store.getRefreshToken(ra.refresh_hash))?.revoked_at).toBe(T0 + 10);
        expect((await store.getRefreshToken(rb.refresh_hash))?.revoked_at).toBeNull();
        await store.revokeTokensWhere({ client_id: b.client_id }, T0 + 20);
        expect((await store.getRefreshToken(rb.refresh_hash))?.revoked_at).toBe(T0 + 20);
      });
    });

    describe("grants and single-flight refresh", () => {
      const refreshed = { access_token_sealed: "sealed-access-1", refresh_token_sealed: "sealed-refresh-1", expires_at: T0 + 7_200_000, scope: ["repo", "user"] };

      test("only one of N concurrent claimers gets the refresh lease", async () => {
        const g = grantFixture();
        await store.createGrant(g);
        expect(await store.getGrant(g.grant_id)).toEqual(g);
        const other = await h.open();
        const results = await Promise.all(
          Array.from({ length: 12 }, (_, i) => (i % 2 ? other : store).claimGrantRefresh(g.grant_id, 0, `owner-${i}`, T0, 30_000)),
        );
        expect(results.filter(Boolean)).toHaveLength(1);
        const winner = `owner-${results.indexOf(true)}`;
        expect(await store.getGrant(g.grant_id)).toEqual({ ...g, refresh_owner: winner, refresh_lease_until: T0 + 30_000 });
      });

      test("a lapsed lease can be taken over", async () => {
        const g = grantFixture();
        await store.createGrant(g);
        expect(await store.claimGrantRefresh(g.grant_id, 0, "owner-1", T0, 30_000)).toBe(true);
        expect(await store.claimGrantRefresh(g.grant_id, 0, "owner-2", T0 + 29_999, 30_000)).toBe(false);
        expect(await store.claimGrantRefresh(g.grant_id, 0, "owner-2", T0 + 30_000, 30_000)).toBe(true);
        // the first owner lost the lease: its late result is discarded
        expect(await store.completeGrantRefresh(g.grant_id, "owner-1", refreshed, T0 + 30_001)).toBe(false);
        expect(await store.completeGrantRefresh(g.grant_id, "owner-2", refreshed, T0 + 30_002)).toBe(true);
      });

      test("completeGrantRefresh by a non-owner writes nothing", async () => {
        const g = grantFixture();
        await store.createGrant(g);
        expect(await store.completeGrantRefresh(g.grant_id, "owner-1", refreshed, T0 + 1)).toBe(false); // no lease at all
        await store.claimGrantRefresh(g.grant_id, 0, "owner-1", T0, 30_000);
        expect(await store.completeGrantRefresh(g.grant_id, "owner-2", refreshed, T0 + 1)).toBe(false);
        expect(await store.getGrant(g.grant_id)).toEqual({ ...g, refresh_owner: "owner-1", refresh_lease_until: T0 + 30_000 });
      });

      test("a completed refresh stores the new tokens, bumps the version and frees the lease", async () => {
        const g = grantFixture();
        await store.createGrant(g);
        await store.claimGrantRefresh(g.grant_id, 0, "owner-1", T0, 30_000);
        expect(await store.completeGrantRefresh(g.grant_id, "owner-1", refreshed, T0 + 5)).toBe(true);
        expect(await store.getGrant(g.grant_id)).toEqual({ ...g, ...refreshed, version: 1, updated_at: T0 + 5 });
        // a claimer that read version 0 is too late; one at version 1 may go
        expect(await store.claimGrantRefresh(g.grant_id, 0, "owner-2", T0 + 6, 30_000)).toBe(false);
        expect(await store.claimGrantRefresh(g.grant_id, 1, "owner-2", T0 + 6, 30_000)).toBe(true);
      });

      test("releasing the lease lets the next claimer in; releasing as dead shuts everyone out", async () => {
        const g = grantFixture();
        await store.createGrant(g);
        await store.claimGrantRefresh(g.grant_id, 0, "owner-1", T0, 30_000);
        await store.releaseGrantRefresh(g.grant_id, "owner-2", true, T0 + 1); // not the owner: no effect
        expect((await store.getGrant(g.grant_id))?.status).toBe("live");
        await store.releaseGrantRefresh(g.grant_id, "owner-1", false, T0 + 2);
        expect(await store.claimGrantRefresh(g.grant_id, 0, "owner-2", T0 + 3, 30_000)).toBe(true);
        await store.releaseGrantRefresh(g.grant_id, "owner-2", true, T0 + 4);
        expect(await store.getGrant(g.grant_id)).toEqual({ ...g, status: "dead", updated_at: T0 + 4 });
        expect(await store.claimGrantRefresh(g.grant_id, 0, "owner-3", T0 + 100_000, 30_000)).toBe(false);
      });

      test("a grant is deleted once", async () => {
        const g = grantFixture({ refresh_token_sealed: null, expires_at: null });
        await store.createGrant(g);
        expect(await store.deleteGrant(g.grant_id)).toEqual(g);
        expect(await store.deleteGrant(g.grant_id)).toBeNull();
      });
    });

    describe("budgets (DESIGN §16)", () => {
      const usage = (o: Partial<Parameters<Store["countBudget"]>[0]> = {}) => ({
        bkey: "k1", window_start: 3_600_000, limit: 5, provider_id: "mail", client_id: "ath_c1",
        user_id: null, rule: "provider:0 GET /v1/echo · 5/1h per agent", expires_at: 7_200_000, ...o,
      });

      test("a call's count is given back once, from any instance, and only if it was taken (DESIGN §24)", async () => {
        const other = await h.open();
        try {
          const u = usage({ bkey: "k-call", limit: 2 });
          expect(await store.countBudget(u, false, "call-1")).toBe(1);
          expect(await store.countBudget(u, false, "call-2")).toBe(2);
          expect(await store.countBudget(u, false, "call-3")).toBeNull(); // spent: nothing taken, nothing kept
          // one after another: two SQLite connections of one process cannot both hold a transaction (PostgreSQL's is one statement)
          const back = [await store.uncountCall("call-1", u), await other.uncountCall("call-1", u), await store.uncountCall("call-1", u)];
          expect(back.filter(Boolean)).toHaveLength(1);
          expect(await store.uncountCall("call-3", u)).toBe(false);
          expect(await store.uncountCall("never", u)).toBe(false);
          expect((await store.listBudgetUsage({ now: 5_000_000 })).find((r) => r.bkey === "k-call")?.used).toBe(1);
        } finally {
          await other.close();
        }
      });

      test("counts exactly to the limit under concurrency from two instances; force counts past it; windows are separate", async () => {
        const other = await h.open();
        try {
          const results = await Promise.all(Array.from({ length: 40 }, (_, i) => (i % 2 ? store : other).countBudget(usage())));
          expect(results.filter((r) => r !== null).sort()).toEqual([1, 2, 3, 4, 5]);
          expect(await store.countBudget(usage())).toBeNull();
          expect(await store.countBudget(usage(), true)).toBe(6);
          await other.uncountBudget(usage());
          expect(await store.countBudget(usage(), true)).toBe(6);
          expect(await store.countBudget(usage({ window_start: 7_200_000, expires_at: 10_800_000 }))).toBe(1);
          expect(await store.countBudget(usage({ limit: 0 }))).toBeNull();
          const rows = await store.listBudgetUsage({ now: 5_000_000 });
          expect(rows.map((r) => [r.window_start, r.used, r.limit])).toEqual([[3_600_000, 6, 5], [7_200_000, 1, 5]]);
          expect(await store.listBudgetUsage({ now: 8_000_000, client_id: "ath_c1" })).toHaveLength(1);
          expect(await store.listBudgetUsage({ now: 5_000_000, client_id: "other" })).toEqual([]);
          // ended windows are swept after the retention
          expect((await store.sweep(7_200_000 + 1000, 1000)).budget_usage).toBe(1);
          expect((await store.listBudgetUsage({ now: 0 })).map((r) => r.window_start)).toEqual([7_200_000]);
        } finally {
          await other.close();
        }
      });
    });

    describe("approvals (DESIGN §15)", () => {
      const approval = (o: Partial<ApprovalRecord> = {}): ApprovalRecord => ({
        approval_id: `ath_apr_${crypto.randomUUID()}`, client_id: "ath_c1", agent_id: "did:key:z1", user_id: "u1",
        provider_id: "mail", token_id: "ath_tkid_1", approver: "user", method: "POST", path: "/v1/messages", query: "",
        digest: "d1", body_sealed: "v1.a.b", headers_sealed: null, body_bytes: 3, content_type: "application/json", status: "pending",
        decided_by: null, decided_at: null, used_at: null, created_at: 1_000, expires_at: 301_000, ...o,
      });
      const match = { client_id: "ath_c1", user_id: "u1", provider_id: "mail", digest: "d1" };

      test("an approval round-trips; it is decided once, before expiry", async () => {
        const a = approval();
        await store.createApproval(a);
        expect(await store.getApproval(a.approval_id)).toEqual(a);
        expect(await store.decideApproval(a.approval_id, "approved", "user:u1", 301_000)).toBeNull(); // expired
        const decided = await store.decideApproval(a.approval_id, "approved", "user:u1", 2_000);
        expect(decided).toEqual({ ...a, status: "approved", decided_by: "user:u1", decided_at: 2_000 });
        expect(await store.decideApproval(a.approval_id, "denied", "admin", 3_000)).toBeNull();
      });

      test("consumeApproval: only approved, unexpired, the same client/user/provider/digest — and once among racers", async () => {
        const a = approval();
        await store.createApproval(a);
        expect(await store.consumeApproval(a.approval_id, match, 2_000)).toBeNull(); // still pending
        await store.decideApproval(a.approval_id, "approved", "user:u1", 2_000);
        for (const wrong of [{ digest: "d2" }, { client_id: "ath_c2" }, { user_id: "u2" }, { provider_id: "other" }]) {
          expect(await store.consumeApproval(a.approval_id, { ...match, ...wrong }, 3_000)).toBeNull();
        }
        expect(await store.consumeApproval(a.approval_id, match, 301_000)).toBeNull(); // expired
        const racers = await Promise.all(Array.from({ length: 6 }, () => store.consumeApproval(a.approval_id, match, 3_000)));
        expect(racers.filter((r) => r !== null).map((r) => r!.status)).toEqual(["used"]);
        expect((await store.getApproval(a.approval_id))!.used_at).toBe(3_000);
      });

      test("countPendingApprovals counts a client's pending, unexpired approvals only", async () => {
        await store.createApproval(approval());
        await store.createApproval(approval({ expires_at: 5_000 }));
        await store.createApproval(approval({ status: "denied" }));
        await store.createApproval(approval({ client_id: "ath_c2" }));
        expect(await store.countPendingApprovals("ath_c1", 10_000)).toBe(1);
        expect(await store.countPendingApprovals("ath_c1", 1_000)).toBe(2);
        expect(await store.countPendingApprovals("ath_none", 1_000)).toBe(0);
      });

      test("listApprovals pages newest first and filters by status, expired computed at now", async () => {
        const old = approval({ created_at: 1_000, expires_at: 5_000 });
        const mid = approval({ created_at: 2_000, status: "denied" });
        const neu = approval({ created_at: 3_000 });
        for (const a of [old, mid, neu]) await store.createApproval(a);
        const ids = (rows: ApprovalRecord[]) => rows.map((r) => r.approval_id);
        expect(ids(await store.listApprovals({ now: 10_000, limit: 10 }))).toEqual([neu, mid, old].map((a) => a.approval_id));
        expect(ids(await store.listApprovals({ now: 10_000, limit: 10, status: "pending" }))).toEqual([neu.approval_id]);
        expect(ids(await store.listApprovals({ now: 10_000, limit: 10, status: "expired" }))).toEqual([old.approval_id]);
        expect(ids(await store.listApprovals({ now: 10_000, limit: 10, status: "denied" }))).toEqual([mid.approval_id]);
        expect(ids(await store.listApprovals({ now: 10_000, limit: 1, after: { created_at: 3_000, approval_id: neu.approval_id } }))).toEqual([mid.approval_id]);
        // a day after the oldest expired, making a new one drops it
        await store.createApproval(approval({ created_at: 5_000 + 24 * 3600 * 1000 + 1 }));
        expect(await store.getApproval(old.approval_id)).toBeNull();
      });

      test("an agent's approval_rules are set, replaced and cleared by updateAgent", async () => {
        const agent = agentFixture();
        await store.createAgent(agent);
        const rules = [{ match: ["POST /x"], approver: "admin" as const, ttl: 60 }];
        await store.updateAgent(agent.client_id, { approval_rules: rules });
        expect((await store.getAgentByClientId(agent.client_id))!.approval_rules).toEqual(rules);
        await store.updateAgent(agent.client_id, { status: "suspended" });
        expect((await store.getAgentByClientId(agent.client_id))!.approval_rules).toEqual(rules);
        await store.updateAgent(agent.client_id, { approval_rules: null });
        expect(await store.getAgentByClientId(agent.client_id)).toEqual({ ...agent, status: "suspended" });
      });
    });

    describe("transactions", () => {
      test("a transaction commits what its function wrote when it resolves", async () => {
        const agent = agentFixture();
        const result = await store.transaction(async (tx) => {
          await tx.createAgent(agent);
          await tx.setMeta("tx", "done");
          return "ok";
        });
        expect(result).toBe("ok");
        expect((await store.getAgentByClientId(agent.client_id))?.agent_id).toBe(agent.agent_id);
        expect(await store.getMeta("tx")).toBe("done");
      });

      test("a transaction whose function throws leaves nothing it wrote behind", async () => {
        const err = await store
          .transaction(async (tx) => {
            await tx.createAgent(agentFixture({ client_id: "c-rollback" }));
            await tx.setMeta("tx", "half");
            throw new Error("decided against it");
          })
          .catch((e: unknown) => e);
        expect((err as Error).message).toBe("decided against it");
        expect(await store.getAgentByClientId("c-rollback")).toBeNull();
        expect(await store.getMeta("tx")).toBeNull();
        expect(await h.count("agents")).toBe(0);
      });

      test("a transaction started from inside another joins it: one rollback undoes both", async () => {
        await store
          .transaction(async (tx) => {
            await tx.transaction(async (inner) => inner.setMeta("inner", "1"));
            await tx.setMeta("outer", "1");
            throw new Error("undo");
          })
          .catch(() => undefined);
        expect(await store.getMeta("inner")).toBeNull();
        expect(await store.getMeta("outer")).toBeNull();
      });

      // SQLite has one writer: its transactions run one after another, and other statements wait for them.
      test.if(name === "SQLite")("SQLite: 20 concurrent read-modify-write transactions lose no update", async () => {
        await store.setMeta("counter", "0");
        await Promise.all(
          Array.from({ length: 20 }, () =>
            store.transaction(async (tx) => {
              const value = Number(await tx.getMeta("counter"));
              await Bun.sleep(1); // yield: without isolation another transaction would read the same value
              await tx.setMeta("counter", String(value + 1));
            }),
          ),
        );
        expect(await store.getMeta("counter")).toBe("20");
      });

      test.if(name === "SQLite")("SQLite: a statement issued while a transaction awaits does not run inside it", async () => {
        let release: () => void = () => undefined;
        const gate = new Promise<void>((r) => (release = r));
        const tx = store
          .transaction(async (t) => {
            await t.setMeta("a", "1");
            await gate;
            throw new Error("rolled back");
          })
          .catch(() => undefined);
        const outside = store.setMeta("b", "outside");
        await Bun.sleep(5);
        release();
        await Promise.all([tx, outside]);
        expect(await store.getMeta("a")).toBeNull();
        expect(await store.getMeta("b")).toBe("outside");
      });
    });

    test("audit is append-only and listed newest first, filtered by type and limited", async () => {
      await store.appendAudit({ type: "agent.registered", at: T0, client_id: "c1", agent_id: "a1", data: { status: "approved" } });
      await store.appendAudit({ type: "token.issued", at: T0 + 1, client_id: "c1", provider_id: "github", user_id: "u1" });
      await store.appendAudit({ type: "token.revoked", at: T0 + 2, data: { reason: "unknown_token" } });
      const all = await store.listAudit();
      expect(all.map((e) => e.type)).toEqual(["token.revoked", "token.issued", "agent.registered"]);
      expect(all[0]!.id!).toBeGreaterThan(all[1]!.id!);
      expect(all[1]!.id!).toBeGreaterThan(all[2]!.id!);
      expect(all[2]).toEqual({
        id: all[2]!.id, type: "agent.registered", at: T0, client_id: "c1", agent_id: "a1", provider_id: null, user_id: null, data: { status: "approved" },
        seq: 1, prev_hash: ZERO_HASH, hash: expect.stringMatching(/^[0-9a-f]{64}$/),
      });
      expect((await store.listAudit({ type: "token.issued" })).map((e) => e.at)).toEqual([T0 + 1]);
      expect((await store.listAudit({ limit: 2 })).map((e) => e.at)).toEqual([T0 + 2, T0 + 1]);
    });

    test("sweep deletes expired rows and the tables shrink", async () => {
      const a = agentFixture();
      await store.createAgent(a);
      const now = T0 + 1_000_000;
      const retain = 60_000;
      const cutoff = now - retain;
      // expired or long-revoked rows
      await store.createSession(sessionFixture(a, { expires_at: now }));
      await store.recordJti(a.agent_id, "old", now - 1, T0);
      const dead = grantFixture({ status: "dead", updated_at: cutoff });
      const orphan = grantFixture({ created_at: cutoff });
      await store.createGrant(dead);
      await store.createGrant(orphan);
      await store.createToken(tokenFixture(a, { expires_at: cutoff }));
      await store.createToken(tokenFixture(a, { revoked_at: cutoff, expires_at: now + 1 }));
      // rows that stay
      const live = sessionFixture(a, { expires_at: now + 1 });
      await store.createSession(live);
      await store.recordJti(a.agent_id, "fresh", now + 1, T0);
      const usedGrant = grantFixture({ created_at: T0 });
      const pendingGrant = grantFixture({ created_at: T0 });
      const newGrant = grantFixture({ created_at: cutoff + 1 });
      const recentlyDead = grantFixture({ status: "dead", updated_at: cutoff + 1 });
      for (const g of [usedGrant, pendingGrant, newGrant, recentlyDead]) await store.createGrant(g);
      // a dead grant goes after `retain` even while tokens still name it (they can no longer be used)
      const kept = [
        tokenFixture(a, { expires_at: cutoff + 1, grant_id: usedGrant.grant_id }),
        tokenFixture(a, { revoked_at: cutoff + 1, grant_id: recentlyDead.grant_id }),
        tokenFixture(a, { grant_id: dead.grant_id }),
      ];
      for (const t of kept) await store.createToken(t);
      const consented = sessionFixture(a, { expires_at: now + 1 });
      await store.createSession(consented);
      await store.markSessionConsented(consented.session_id, { code_hash: "c", user_id: "u", consented_scopes: [], grant_id: pendingGrant.grant_id, expires_at: now + 1 });

      const before = { sessions: await h.count("sessions"), jti: await h.count("jti"), tokens: await h.count("tokens"), grants: await h.count("grants") };
      expect(await store.sweep(now, retain)).toEqual({ sessions: 1, jti: 1, tokens: 2, refresh_tokens: 0, grants: 2, agents: 0, mcp_clients: 0, audit: 0, rate_leases: 0, budget_usage: 0, webhooks: 0 });
      expect({ sessions: await h.count("sessions"), jti: await h.count("jti"), tokens: await h.count("tokens"), grants: await h.count("grants") })
        .toEqual({ sessions: before.sessions - 1, jti: before.jti - 1, tokens: before.tokens - 2, grants: before.grants - 2 });
      expect(await store.getGrant(dead.grant_id)).toBeNull();
      expect(await store.getGrant(orphan.grant_id)).toBeNull();
      for (const g of [usedGrant, pendingGrant, newGrant, recentlyDead]) expect(await store.getGrant(g.grant_id)).toEqual(g);
      for (const t of kept) expect(await store.getToken(t.token_hash)).toEqual(t);
      expect(await store.getSession(live.session_id)).toEqual(live);
      expect(await store.recordJti(a.agent_id, "fresh", now + 2, now)).toBe(false);
      expect(await store.sweep(now, retain)).toEqual({ sessions: 0, jti: 0, tokens: 0, refresh_tokens: 0, grants: 0, agents: 0, mcp_clients: 0, audit: 0, rate_leases: 0, budget_usage: 0, webhooks: 0 });
    });

    test("sweep keeps a grant no token names while the MCP client holds a live family for that person (a federated URL's members, DESIGN §22), and deletes it once the family is revoked", async () => {
      const a = agentFixture();
      await store.createAgent(a);
      const now = T0 + 1_000_000;
      const retain = 60_000;
      const member = grantFixture({ agent_id: a.agent_id, user_id: "person-1", provider_id: "calendar", created_at: T0 });
      const otherPerson = grantFixture({ agent_id: a.agent_id, user_id: "person-2", provider_id: "calendar", created_at: T0 });
      await store.createGrant(member);
      await store.createGrant(otherPerson);
      await store.createRefreshToken({
        refresh_hash: "rt-federated", family_id: "fam-fed", client_id: a.client_id, oauth_client_id: "mcp_client", resource: "https://gw.example/mcp",
        agent_id: a.agent_id, user_id: "person-1", provider_id: "mail", scopes: ["tools"], grant_id: null, jkt: null,
        family_expires_at: now + 86_400_000, expires_at: now + 3_600_000, created_at: T0, spent_at: null, revoked_at: null,
      });
      expect((await store.sweep(now, retain)).grants).toBe(1);
      expect(await store.getGrant(member.grant_id)).toEqual(member);
      expect(await store.getGrant(otherPerson.grant_id)).toBeNull();
      await store.revokeRefreshFamily("fam-fed", now);
      expect((await store.sweep(now + 1, retain)).grants).toBe(1);
      expect(await store.getGrant(member.grant_id)).toBeNull();
    });

    test("sweep deletes agents that never got an approved scope and hold no token, once past retention — not pending ones, not approved ones, not token holders", async () => {
      const now = T0 + 1_000_000;
      const retain = 60_000;
      const old = now - retain;
      const none = [{ provider_id: "github", approved_scopes: [], denied_scopes: ["repo"], denial_reason: "unknown provider" }];
      const goes = [agentFixture({ status: "denied", approvals: none, created_at: old }), agentFixture({ status: "suspended", approvals: [], created_at: old })];
      const stays = [
        agentFixture({ status: "denied", approvals: none, created_at: old + 1 }), // too recent
        agentFixture({ status: "pending", approvals: none, created_at: old }), // awaits an admin
        agentFixture({ status: "approved", created_at: old }), // holds an approved scope
        agentFixture({ status: "denied", created_at: old }), // was approved once (denied later by an admin)
      ];
      const holder = agentFixture({ status: "denied", approvals: none, created_at: old });
      for (const a of [...goes, ...stays, holder]) await store.createAgent(a);
      await store.createToken(tokenFixture(holder, { expires_at: now + 1 }));
      await store.createSession(sessionFixture(goes[0]!, { expires_at: now + 1 }));
      expect((await store.sweep(now, retain)).agents).toBe(2);
      for (const a of goes) expect(await store.getAgentByClientId(a.client_id)).toBeNull();
      for (const a of [...stays, holder]) expect((await store.getAgentByClientId(a.client_id))?.client_id).toBe(a.client_id);
    });

    test("sweep deletes dynamically registered MCP clients that never completed an authorization, once past retention, with the agent record they act as — not authorized ones, not recent ones", async () => {
      const now = T0 + 1_000_000;
      const retain = 60_000;
      const old = now - retain;
      const metadata = { redirect_uris: ["http://127.0.0.1/cb"], grant_types: ["authorization_code"], response_types: ["code"], token_endpoint_auth_method: "none" as const };
      const client = (client_id: string, created_at: number, authorized_at: number | null) => ({ client_id, client_secret_hash: null, metadata, created_at, authorized_at });
      await store.createMcpClient(client("mcp_unused", old, null));
      await store.createMcpClient(client("mcp_started", old, null)); // opened /oauth/authorize, never exchanged a code
      await store.createMcpClient(client("mcp_used", old, old + 5));
      await store.createMcpClient(client("mcp_recent", old + 1, null));
      const started = agentFixture({ client_id: "mcp_started", agent_id: "mcp:mcp_started", created_at: old });
      const used = agentFixture({ client_id: "mcp_used", agent_id: "mcp:mcp_used", created_at: old });
      await store.createAgent(started);
      await store.createAgent(used);
      await store.createSession(sessionFixture(started, { expires_at: now + 1 }));
      await store.markMcpClientAuthorized("mcp_recent", old + 2);
      await store.markMcpClientAuthorized("mcp_used", now); // a later authorization keeps the first time
      expect((await store.getMcpClient("mcp_used"))?.authorized_at).toBe(old + 5);
      const swept = await store.sweep(now, retain);
      expect({ mcp_clients: swept.mcp_clients, agents: swept.agents }).toEqual({ mcp_clients: 2, agents: 1 });
      for (const id of ["mcp_unused", "mcp_started"]) expect(await store.getMcpClient(id)).toBeNull();
      expect(await store.getAgentByClientId("mcp_started")).toBeNull();
      expect(await h.count("sessions")).toBe(0);
      for (const id of ["mcp_used", "mcp_recent"]) expect((await store.getMcpClient(id))?.client_id).toBe(id);
      expect((await store.getAgentByClientId("mcp_used"))?.client_id).toBe("mcp_used");
    });

    test("sweep deletes in batches: 2,500 expired tokens all go, live ones and another agent's same jti stay", async () => {
      const agent = agentFixture();
      await store.createAgent(agent);
      const now = T0 + 10_000_000;
      await store.transaction(async (tx) => {
        for (let i = 0; i < 2_500; i++) await tx.createToken(tokenFixture(agent, { expires_at: T0, token_hash: `expired-${i}` }));
        for (let i = 0; i < 3; i++) await tx.createToken(tokenFixture(agent, { expires_at: now + 60_000, token_hash: `live-${i}` }));
      });
      await store.recordJti("agent-a", "same-jti", T0, T0);
      await store.recordJti("agent-b", "same-jti", now + 60_000, T0);
      const swept = await store.sweep(now, 1_000);
      expect(swept.tokens).toBe(2_500);
      expect(swept.jti).toBe(1);
      expect(await h.count("tokens")).toBe(3);
      expect(await store.recordJti("agent-b", "same-jti", now + 60_000, now)).toBe(false); // still remembered
    });

    test("sweep deletes audit events older than the audit retention, only when one is given, and only up to a checkpoint", async () => {
      await store.appendAudit({ type: "token.revocation_ignored", at: T0 });
      await store.appendAudit({ type: "token.revocation_ignored", at: T0 + 10 });
      await store.appendAudit({ type: "token.issued", at: T0 + 20 });
      expect((await store.sweep(T0 + 100, 0)).audit).toBe(0);
      // No signed anchor yet: nothing may go, or what remains could not be verified (DESIGN §20).
      expect((await store.sweep(T0 + 100, 0, 85)).audit).toBe(0);
      expect(await store.auditSweepPoint(T0 + 15)).toMatchObject({ seq: 2 });
      const [, second] = await store.listAuditChain({ afterSeq: 0, limit: 10 });
      await store.addAuditCheckpoint({ seq: 1, hash: "h1", time: T0 + 1, signature: "s", kid: "k" });
      await store.addAuditCheckpoint({ seq: 2, hash: second!.hash!, time: T0 + 30, signature: "s", kid: "k" });
      expect((await store.sweep(T0 + 100, 0, 85)).audit).toBe(2);
      expect((await store.listAudit()).map((e) => e.at)).toEqual([T0 + 20]);
      // The anchor stays, the checkpoints below it go.
      expect((await store.listAuditCheckpoints({ afterSeq: 0, throughSeq: 10 })).map((c) => c.seq)).toEqual([2]);
      expect(await store.firstAuditSeq()).toBe(3);
    });

    test("the audit chain: two instances appending at once never fork it; every link hashes", async () => {
      // SQLite: two connections in one process would wait on each other's lock with the event loop blocked (its busy
      // timeout is synchronous), so both writers share one connection there; separate processes take BEGIN IMMEDIATE
      // turns. PostgreSQL: two pools, as two instances.
      const other = h.schema ? await h.open() : store;
      try {
        const writers = [store, other].flatMap((s, w) =>
          Array.from({ length: 10 }, (_, i) => s.appendAudit(
            { type: "proxy.call", at: T0 + i, client_id: `c${w}`, data: { i, w, nested: { b: 1, a: [1, "x"] } } },
            { type: "token.issued", at: T0 + i, user_id: `u${w}` },
          )),
        );
        await Promise.all(writers);
        const chain = await store.listAuditChain({ afterSeq: 0, limit: 100 });
        expect(chain.map((e) => e.seq)).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
        let prev = ZERO_HASH;
        for (const e of chain) {
          expect(e.prev_hash).toBe(prev);
          expect(e.hash).toBe(hashRecord(chainRecord({ ...e, seq: e.seq!, prev_hash: e.prev_hash! })));
          prev = e.hash!;
        }
        expect(await other.auditHead()).toEqual({ seq: 40, hash: prev });
        expect((await store.listAuditChain({ afterSeq: 38, throughSeq: 39, limit: 10 })).map((e) => e.seq)).toEqual([39]);
      } finally {
        if (other !== store) await other.close();
      }
    });

    test("the webhook outbox: fan-out to subscribers, only the head of each endpoint leased, once across instances", async () => {
      const hook = (id: string, events: string[]) => ({ webhook_id: id, url: `https://h.example/${id}`, events, secret_sealed: "sealed", created_at: T0 });
      await store.createWebhook(hook("w1", ["token.issued", "agent.registered"]));
      await store.createWebhook(hook("w2", ["token.revoked"]));
      expect(await store.enqueueWebhookEvent({ event_id: "e1", type: "token.issued", body: "{}", created_at: T0 })).toBe(1);
      expect(await store.enqueueWebhookEvent({ event_id: "e2", type: "agent.registered", body: "{}", created_at: T0 })).toBe(1);
      expect(await store.enqueueWebhookEvent({ event_id: "e3", type: "token.revoked", body: "{}", created_at: T0 })).toBe(1);
      expect(await store.enqueueWebhookEvent({ event_id: "e4", type: "agent.approved", body: "{}", created_at: T0 })).toBe(0);
      const other = h.schema ? await h.open() : store;
      try {
        const [x, y] = await Promise.all([store.claimWebhookDeliveries("A", T0, 1_000), other.claimWebhookDeliveries("B", T0, 1_000)]);
        const claimed = [...x, ...y].map((d) => d.event_id).sort();
        expect(claimed).toEqual(["e1", "e3"]); // e2 waits behind e1 (same endpoint), each head leased once
        const e1 = [...x, ...y].find((d) => d.event_id === "e1")!;
        const holder = x.includes(e1) ? "A" : "B";
        expect(await store.claimWebhookDeliveries("C", T0 + 500, 1_000)).toEqual([]); // leases still held
        expect(await store.finishWebhookDelivery(e1.id, "C", { state: "delivered", attempts: 1, next_at: T0 })).toBe(false);
        expect(await store.finishWebhookDelivery(e1.id, holder, { state: "delivered", attempts: 1, next_at: T0 })).toBe(true);
        // e2 is the head now; e3's lease lapsed and it is claimable again
        expect((await store.claimWebhookDeliveries("C", T0 + 1_001, 1_000)).map((d) => d.event_id)).toEqual(["e2", "e3"]);
        expect(await store.countWebhookOutbox()).toEqual({ pending: 2, delivered: 1, failed: 0 });
        // delivered rows go with the sweep once past retention; pending ones stay
        expect((await store.sweep(T0 + 10, 5)).webhooks).toBe(1);
        expect(await store.countWebhookOutbox()).toEqual({ pending: 2, delivered: 0, failed: 0 });
        expect(await store.deleteWebhook("w1")).toBe(true);
        expect(await store.countWebhookOutbox()).toEqual({ pending: 1, delivered: 0, failed: 0 });
      } finally {
        if (other !== store) await other.close();
      }
    });

    test("audit checkpoints: one per seq (the first writer's), found by time and by seq", async () => {
      expect(await store.addAuditCheckpoint({ seq: 5, hash: "a", time: T0 + 5, signature: "s1", kid: "k" })).toBe(true);
      expect(await store.addAuditCheckpoint({ seq: 5, hash: "b", time: T0 + 6, signature: "s2", kid: "k" })).toBe(false);
      await store.addAuditCheckpoint({ seq: 9, hash: "c", time: T0 + 9, signature: "s3", kid: "k" });
      expect(await store.lastAuditCheckpoint({})).toMatchObject({ seq: 9 });
      expect(await store.lastAuditCheckpoint({ beforeTime: T0 + 9 })).toMatchObject({ seq: 5, hash: "a", signature: "s1" });
      expect(await store.lastAuditCheckpoint({ maxSeq: 4 })).toBeNull();
      expect(await store.setMetaIfAbsent("audit_key", "first")).toBe("first");
      expect(await store.setMetaIfAbsent("audit_key", "second")).toBe("first");
    });
  });
}
