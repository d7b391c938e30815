/**
 * The store's part of DESIGN §23, on SQLite and PostgreSQL: trusted issuers upserted by issuer; a workload agent's row
 * goes with its agent; a connection's person; the newest live grant of (agent, person, provider); a delegated token's
 * ancestors — revoking one revokes every live descendant at any depth, in one statement; and budget shares — a carve
 * never takes a row past its limit, with carves and counts racing on two store instances (exact across instances).
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import type { Store } from "../../../src/store/types.ts";
import { type Harness, PG_URL, T0, agentFixture, grantFixture, postgresHarness, sqliteHarness, tokenFixture } from "../../helpers/store-harness.ts";

identityStore("SQLite", sqliteHarness);
if (PG_URL) identityStore("PostgreSQL", () => postgresHarness(PG_URL));

const usage = (bkey: string, limit: number) => ({ bkey, window_start: 0, limit, provider_id: "github", client_id: "ath_c", user_id: "u", rule: "share", expires_at: T0 + 3_600_000 });

function identityStore(name: string, makeHarness: () => Harness) {
  describe(`Store — enterprise identity and delegation — ${name}`, () => {
    let h: Harness;
    let store: Store;
    beforeEach(async () => {
      h = makeHarness();
      store = await h.open();
    });
    afterEach(() => h.dispose());

    test("trusted issuers are upserted by issuer and deleted once", async () => {
      const config = { issuer: "https://idp.example", jwks_uri: "https://idp.example/jwks", kind: "idp" as const };
      await store.upsertTrustedIssuer({ issuer: config.issuer, config, source: "file", updated_at: T0 });
      await store.upsertTrustedIssuer({ issuer: config.issuer, config: { ...config, audience: "https://gw" }, source: "admin", updated_at: T0 + 1 });
      expect(await store.listTrustedIssuers()).toEqual([{ issuer: config.issuer, config: { ...config, audience: "https://gw" }, source: "admin", updated_at: T0 + 1 }]);
      expect(await store.deleteTrustedIssuer(config.issuer)).toBe(true);
      expect(await store.deleteTrustedIssuer(config.issuer)).toBe(false);
      expect(await store.getTrustedIssuer(config.issuer)).toBeNull();
    });

    test("a workload agent's row goes with its agent; a connection names its person until it expires", async () => {
      const a = agentFixture({ agent_id: "spiffe://corp/agents/x" });
      await store.createAgent(a);
      await store.createWorkloadAgent({ client_id: a.client_id, issuer: "https://spire.corp", jkt: "jkt-1" });
      expect(await store.getWorkloadAgent(a.client_id)).toEqual({ client_id: a.client_id, issuer: "https://spire.corp", jkt: "jkt-1" });
      await store.deleteAgent(a.client_id);
      expect(await store.getWorkloadAgent(a.client_id)).toBeNull();
      await store.recordConnection({ session_id: "s1", person: "https://idp#alice", expires_at: T0 + 600_000 }, T0);
      expect(await store.getConnection("s1")).toEqual({ person: "https://idp#alice" });
      await store.recordConnection({ session_id: "s2", person: "https://idp#bob", expires_at: T0 + 1_300_000 }, T0 + 700_000);
      expect(await store.getConnection("s1")).toBeNull();
    });

    test("the newest live grant of (agent, person, provider) is found; dead ones and others' are not", async () => {
      const mine = { agent_id: "did:key:zA", user_id: "https://idp#alice", provider_id: "github" };
      await store.createGrant(grantFixture({ ...mine, created_at: T0 }));
      const newest = grantFixture({ ...mine, created_at: T0 + 10 });
      await store.createGrant(newest);
      await store.createGrant(grantFixture({ ...mine, created_at: T0 + 20, status: "dead" }));
      await store.createGrant(grantFixture({ ...mine, agent_id: "did:key:zB", created_at: T0 + 30 }));
      expect((await store.findLiveGrant(mine.agent_id, mine.user_id, mine.provider_id))?.grant_id).toBe(newest.grant_id);
      expect(await store.findLiveGrant(mine.agent_id, "https://idp#bob", "github")).toBeNull();
    });

    test("revoking an ancestor revokes every live descendant, at any depth, in one statement; revoked and unrelated tokens are left as they are", async () => {
      const a = agentFixture();
      await store.createAgent(a);
      const [root, child, grandchild, sibling, other] = [0, 1, 2, 3, 4].map(() => tokenFixture(a));
      for (const t of [root!, child!, grandchild!, sibling!, other!]) await store.createToken(t);
      await store.recordAncestors(child!.token_hash, [root!.token_id], T0 + 3_600_000, T0);
      await store.recordAncestors(grandchild!.token_hash, [child!.token_id, root!.token_id], T0 + 3_600_000, T0);
      await store.recordAncestors(sibling!.token_hash, [root!.token_id], T0 + 3_600_000, T0);
      await store.revokeToken(sibling!.token_hash, T0 + 5);
      const revoked = await store.revokeDescendants([root!.token_id], T0 + 10);
      expect(revoked.map((t) => t.token_id).sort()).toEqual([child!.token_id, grandchild!.token_id].sort());
      expect(revoked.every((t) => t.revoked_at === T0 + 10)).toBe(true);
      expect((await store.getToken(sibling!.token_hash))?.revoked_at).toBe(T0 + 5);
      expect((await store.getToken(other!.token_hash))?.revoked_at).toBeNull();
      expect(await store.revokeDescendants([root!.token_id], T0 + 20)).toEqual([]);
    });

    test("a token's delegation round-trips with the token", async () => {
      const a = agentFixture();
      await store.createAgent(a);
      const delegation = { chain: [{ token_id: "ath_tkid_p", token_hash: "hp", agent_id: "did:key:zP", client_id: "ath_p" }], budget: 5 };
      const t = tokenFixture(a, { delegation });
      await store.createToken(t);
      expect(await store.getToken(t.token_hash)).toEqual(t);
    });

    test("carving is exact: 60 concurrent carves of 1 and 60 concurrent counted calls on two instances against a limit of 50 leave exactly 50 used", async () => {
      const other = await h.open();
      await store.openBudget(usage("delegation:p", 50));
      const carves = Array.from({ length: 60 }, (_, i) => (i % 2 ? store : other).carveBudget("delegation:p", 0, 1));
      const calls = Array.from({ length: 60 }, (_, i) => (i % 2 ? other : store).countBudget(usage("delegation:p", 50)));
      const results = await Promise.all([...carves, ...calls]);
      expect(results.filter((r) => r !== null)).toHaveLength(50);
      expect(await store.carveBudget("delegation:p", 0, 1)).toBeNull();
      const [row] = await h.query("SELECT used FROM budget_usage WHERE bkey = 'delegation:p'");
      expect(Number(row!.used)).toBe(50);
    });

    test("a carve larger than what is left changes nothing; one that fits takes exactly its share", async () => {
      await store.openBudget(usage("delegation:q", 10));
      expect(await store.carveBudget("delegation:q", 0, 7)).toBe(7);
      expect(await store.carveBudget("delegation:q", 0, 4)).toBeNull();
      expect(await store.carveBudget("delegation:q", 0, 3)).toBe(10);
      expect(await store.carveBudget("delegation:nothing", 0, 1)).toBeNull();
    });
  });
}
