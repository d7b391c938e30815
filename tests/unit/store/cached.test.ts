/**
 * The read-through cache (store/cached.ts, DESIGN §13) over both drivers: warm reads come from memory, every write
 * that changes a cached record invalidates it — through this instance, inside a transaction once committed, or on
 * another instance through the change feed — and while the feed cannot vouch for itself the cache is bypassed.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { SQL } from "bun";
import { cachedStore, type CachedStore } from "../../../src/store/cached.ts";
import type { Store } from "../../../src/store/types.ts";
import {
  type Harness, T0, agentFixture, grantFixture, PG_URL, postgresHarness, sqliteHarness, tokenFixture,
} from "../../helpers/store-harness.ts";

cacheSuite("SQLite", sqliteHarness);
if (PG_URL) cacheSuite("PostgreSQL", () => postgresHarness(PG_URL));

/** Waits until `check` holds, for a change announced by another process (the cap only guards a broken feed). */
async function eventually(check: () => Promise<boolean>): Promise<number> {
  const start = performance.now();
  while (!(await check())) {
    if (performance.now() - start > 5_000) throw new Error("the change never arrived");
    await Bun.sleep(2);
  }
  return performance.now() - start;
}

function cacheSuite(name: string, makeHarness: () => Harness) {
  describe(`cached store — ${name}`, () => {
    let h: Harness;
    let raw: Store;
    let cache: CachedStore;
    beforeEach(async () => {
      h = makeHarness();
      raw = await h.open();
      cache = await cachedStore(raw);
      await eventually(async () => cache.cacheStats.live); // PostgreSQL: once the listener is subscribed
    });
    afterEach(async () => {
      await cache.close().catch(() => undefined);
      await h.dispose();
    });

    async function seeded() {
      const agent = agentFixture();
      await raw.createAgent(agent);
      const grant = grantFixture({ agent_id: agent.agent_id });
      await raw.createGrant(grant);
      const token = tokenFixture(agent, { grant_id: grant.grant_id });
      await raw.createToken(token);
      return { agent, grant, token };
    }

    test("a write that failed — maybe after it committed — drops what it touched: the next read asks the database", async () => {
      const { token } = await seeded();
      // the database lost the connection between COMMIT and its answer: the revocation happened, the caller saw an error
      const flaky: Store = {
        ...raw,
        revokeToken: async (hash, now) => {
          await raw.revokeToken(hash, now);
          throw new Error("connection lost after COMMIT");
        },
        close: async () => undefined,
      };
      const c = await cachedStore(flaky);
      try {
        await eventually(async () => c.cacheStats.live);
        await c.getToken(token.token_hash);
        expect((await c.getToken(token.token_hash))?.revoked_at).toBeNull(); // warm
        await expect(c.revokeToken(token.token_hash, T0 + 1)).rejects.toThrow("connection lost");
        expect((await c.getToken(token.token_hash))?.revoked_at).toBe(T0 + 1);
      } finally {
        await c.close();
      }
    });

    test("a warm read of a token, grant, agent or provider is served from memory, and equals the store's", async () => {
      const { agent, grant, token } = await seeded();
      const first = await Promise.all([cache.getToken(token.token_hash), cache.getGrant(grant.grant_id), cache.getAgentByClientId(agent.client_id)]);
      const hits = cache.cacheStats.hits;
      const second = await Promise.all([cache.getToken(token.token_hash), cache.getGrant(grant.grant_id), cache.getAgentByClientId(agent.client_id)]);
      expect(second).toEqual(first);
      expect(second).toEqual(await Promise.all([raw.getToken(token.token_hash), raw.getGrant(grant.grant_id), raw.getAgentByClientId(agent.client_id)]));
      expect(cache.cacheStats.hits).toBe(hits + 3);
    });

    test("an unknown token is not remembered: a token created afterwards is found", async () => {
      const agent = agentFixture();
      await raw.createAgent(agent);
      const token = tokenFixture(agent);
      expect(await cache.getToken(token.token_hash)).toBeNull();
      await cache.createToken(token);
      expect((await cache.getToken(token.token_hash))?.token_hash).toBe(token.token_hash);
    });

    test("every write through the cache invalidates what it changed", async () => {
      const { agent, grant, token } = await seeded();
      await cache.getToken(token.token_hash);
      await cache.revokeToken(token.token_hash, T0 + 1);
      expect((await cache.getToken(token.token_hash))?.revoked_at).toBe(T0 + 1);

      const other = tokenFixture(agent);
      await raw.createToken(other);
      await cache.getToken(other.token_hash);
      await cache.revokeTokensOfClient(agent.client_id, T0 + 2);
      expect((await cache.getToken(other.token_hash))?.revoked_at).toBe(T0 + 2);

      await cache.getAgentByClientId(agent.client_id);
      await cache.updateAgent(agent.client_id, { status: "suspended" });
      expect((await cache.getAgentByClientId(agent.client_id))?.status).toBe("suspended");

      await cache.getGrant(grant.grant_id);
      expect(await cache.claimGrantRefresh(grant.grant_id, grant.version, "me", T0, 1000)).toBe(true);
      expect((await cache.getGrant(grant.grant_id))?.refresh_owner).toBe("me");
      await cache.completeGrantRefresh(grant.grant_id, "me", { access_token_sealed: "new", refresh_token_sealed: null, expires_at: null, scope: ["a"] }, T0);
      expect((await cache.getGrant(grant.grant_id))?.version).toBe(grant.version + 1);
      await cache.deleteGrant(grant.grant_id);
      expect(await cache.getGrant(grant.grant_id)).toBeNull();

      const provider = { provider_id: "p1", config: { display_name: "One" } as never, client_secret_sealed: "s", source: "admin" as const, updated_at: T0 };
      await cache.upsertProvider(provider);
      await cache.getProvider("p1");
      await cache.upsertProvider({ ...provider, config: { display_name: "Two" } as never });
      expect((await cache.getProvider("p1"))?.config.display_name).toBe("Two");
      await cache.deleteProvider("p1");
      expect(await cache.getProvider("p1")).toBeNull();
    });

    test("a sweep empties the cache: a swept token reads as unknown, not as its cached expired self", async () => {
      const agent = agentFixture();
      await raw.createAgent(agent);
      const token = tokenFixture(agent, { expires_at: T0 + 1 });
      await raw.createToken(token);
      expect((await cache.getToken(token.token_hash))?.token_hash).toBe(token.token_hash);
      await cache.sweep(T0 + 10_000, 1_000);
      expect(await cache.getToken(token.token_hash)).toBeNull();
    });

    test("writes inside a transaction are invalidated once it commits; a rolled-back one leaves the cache right", async () => {
      const { agent, token } = await seeded();
      await cache.getToken(token.token_hash);
      await cache.getAgentByClientId(agent.client_id);
      await cache.transaction(async (tx) => {
        await tx.transaction(async (inner) => inner.revokeToken(token.token_hash, T0 + 5));
        await tx.updateAgent(agent.client_id, { status: "denied" });
      });
      expect((await cache.getToken(token.token_hash))?.revoked_at).toBe(T0 + 5);
      expect((await cache.getAgentByClientId(agent.client_id))?.status).toBe("denied");

      await cache
        .transaction(async (tx) => {
          await tx.updateAgent(agent.client_id, { status: "approved" });
          throw new Error("no");
        })
        .catch(() => undefined);
      expect((await cache.getAgentByClientId(agent.client_id))?.status).toBe("denied");
    });

    test("a Store method the cache does not know flushes everything after it runs", async () => {
      const { token } = await seeded();
      const extended = Object.assign(raw, { surpriseVerb: async () => raw.revokeToken(token.token_hash, T0 + 9) });
      const c = await cachedStore(extended);
      try {
        await eventually(async () => c.cacheStats.live);
        await c.getToken(token.token_hash);
        expect((await c.getToken(token.token_hash))?.revoked_at).toBeNull(); // served from the cache now
        await (c as unknown as { surpriseVerb(): Promise<unknown> }).surpriseVerb();
        expect((await c.getToken(token.token_hash))?.revoked_at).toBe(T0 + 9);
      } finally {
        await c.close().catch(() => undefined);
      }
    });

    test("a change made by another instance reaches this one's cache through the change feed", async () => {
      const { agent, token } = await seeded();
      const otherRaw = await h.open();
      const other = await cachedStore(otherRaw);
      try {
        await eventually(async () => other.cacheStats.live);
        await cache.getToken(token.token_hash);
        expect((await cache.getToken(token.token_hash))?.revoked_at).toBeNull();
        await other.revokeToken(token.token_hash, T0 + 7);
        const ms = await eventually(async () => (await cache.getToken(token.token_hash))?.revoked_at === T0 + 7);
        console.log(`[cache ${name}] another instance's revocation seen after ${ms.toFixed(1)} ms`);
        await cache.getAgentByClientId(agent.client_id);
        await other.updateAgent(agent.client_id, { status: "suspended" });
        await eventually(async () => (await cache.getAgentByClientId(agent.client_id))?.status === "suspended");
      } finally {
        await other.close();
      }
    });

    if (name === "PostgreSQL") {
      test("while the change listener is down the cache is bypassed; when it is back the cache is flushed and used again", async () => {
        const { token } = await seeded();
        await cache.getToken(token.token_hash);
        const admin = new SQL(PG_URL, { max: 1 });
        try {
          // Only this test's listener: the LISTEN of the schema's channel.
          const terminated = await admin`SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                      WHERE application_name = 'ath-changes' AND query LIKE ${`%ath_changes_${h.schema}%`}`;
          expect(terminated.length).toBe(1);
        } finally {
          await admin.close();
        }
        await eventually(async () => !cache.cacheStats.live);
        await raw.revokeToken(token.token_hash, T0 + 11); // not through the cache: nobody announces it
        expect((await cache.getToken(token.token_hash))?.revoked_at).toBe(T0 + 11); // bypassed: the store's answer
        await eventually(async () => {
          const hits = cache.cacheStats.hits;
          await cache.getToken(token.token_hash);
          return cache.cacheStats.hits > hits; // listening again, and used again
        });
        expect((await cache.getToken(token.token_hash))?.revoked_at).toBe(T0 + 11);
      });
    }
  });
}
