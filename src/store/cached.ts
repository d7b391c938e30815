/**
 * The read-through cache in front of the Store (DESIGN §13): a warm proxied request reads its token, provider, grant
 * and agent from memory. Every write that can change one of them — through this wrapper, or announced by another
 * process on the change feed (notify.ts) — invalidates it exactly; while the feed cannot vouch for completeness (the
 * PostgreSQL listener is down) the cache is bypassed, and it is flushed when the feed is live again.
 *
 * Writes are known by name (WRITES below, with the keys each touches). A Store method this file does not know flushes
 * everything after it runs: a verb added later is correct before it is fast. Inside `transaction` nothing is read from
 * the cache (decisions read the database, FOR UPDATE where they must) and the keys written are invalidated — here and
 * on the feed — once it committed.
 */
import type { ChangeKey } from "./notify.ts";
import type { AgentRecord, GrantRecord, ProviderRecord, Store, TokenRecord } from "./types.ts";

export interface CacheOptions {
  /** Entries per kind (tokens, grants, agents, providers) before the oldest are dropped. */
  maxEntries?: number;
}

export interface CachedStore extends Store {
  /**
   * Hit/miss counters, and whether the cache is in use (the change feed is live), for tests and metrics; `generation`
   * changes with every invalidation (here or announced on the feed): what was computed from cached reads at one
   * generation holds while it is unchanged and `live` (proxy/plan.ts keeps a warm caller's checks so).
   */
  readonly cacheStats: { hits: number; misses: number; bypassed: number; live: boolean; readonly generation: number };
}

/** Wraps `inner`; resolves once the change feed is subscribed (reads bypass the cache until it is live). */
export async function cachedStore(inner: Store, o: CacheOptions = {}): Promise<CachedStore> {
  const max = o.maxEntries ?? 100_000;
  const tokensOfClient = new Map<string, Set<string>>();
  const tokens = new Bounded<TokenRecord>(max, (hash, t) => {
    const set = tokensOfClient.get(t.client_id);
    set?.delete(hash);
    if (set?.size === 0) tokensOfClient.delete(t.client_id);
  });
  const grants = new Bounded<GrantRecord>(max);
  const agents = new Bounded<AgentRecord>(max);
  const providers = new Bounded<ProviderRecord>(max);
  /** `generation` is bumped by every invalidation: a read that started before one must not fill the cache with what it fetched. */
  const stats = { hits: 0, misses: 0, bypassed: 0, live: false, generation: 0 };

  const flush = () => {
    stats.generation++;
    tokens.clear();
    tokensOfClient.clear();
    grants.clear();
    agents.clear();
    providers.clear();
  };
  const invalidate = (key: ChangeKey) => {
    stats.generation++;
    const colon = key.indexOf(":");
    const kind = key.slice(0, colon);
    const id = key.slice(colon + 1);
    if (key === "*") return flush();
    if (kind === "t") return tokens.delete(id);
    if (kind === "g") return grants.delete(id);
    if (kind === "p") return providers.delete(id);
    if (kind === "c") {
      agents.delete(id);
      for (const hash of [...(tokensOfClient.get(id) ?? [])]) tokens.delete(hash);
      tokensOfClient.delete(id);
      return;
    }
    flush(); // a key of a kind this version does not know: be safe
  };
  const feed = inner.changes();
  const changed = async (keys: ChangeKey[]) => {
    for (const key of keys) invalidate(key);
    await feed.publish(keys);
  };
  const stop = await feed.subscribe(invalidate, (live) => {
    if (live) flush();
    stats.live = live;
  });

  /** A cached read: the cache when trusted and warm, else the store (filling the cache if nothing changed meanwhile). */
  // Not an async function: a hit — every warm proxied request, four times — is one resolved promise, no async frame.
  function read<T>(cache: Bounded<T>, id: string, load: () => Promise<T | null>, onFill?: (v: T) => void): Promise<T | null> {
    if (!stats.live) {
      stats.bypassed++;
      return fill(cache, id, load, undefined, false);
    }
    const hit = cache.get(id);
    if (hit !== undefined) {
      stats.hits++;
      return Promise.resolve(hit);
    }
    stats.misses++;
    return fill(cache, id, load, onFill);
  }

  /** The store's answer; kept (`keep`) if nothing was invalidated meanwhile and the cache is trusted. */
  async function fill<T>(cache: Bounded<T>, id: string, load: () => Promise<T | null>, onFill?: (v: T) => void, keep = true): Promise<T | null> {
    const before = stats.generation;
    const value = await load();
    if (keep && value !== null && before === stats.generation && stats.live) {
      cache.set(id, value);
      onFill?.(value);
    }
    return value;
  }

  // A write that failed may still have committed (PostgreSQL gone between COMMIT and its answer): what it touched is
  // dropped from this cache anyway, so the next read asks the database rather than trust a copy (DESIGN §14).
  const forget = (keys: ChangeKey[]) => keys.forEach(invalidate);
  const store = wrapWrites(inner, changed, forget);
  return Object.assign(store, {
    cacheStats: stats,
    getToken: (hash: string) =>
      read(tokens, hash, () => inner.getToken(hash), (t) => {
        const set = tokensOfClient.get(t.client_id) ?? new Set<string>();
        set.add(hash);
        tokensOfClient.set(t.client_id, set);
      }),
    getGrant: (id: string) => read(grants, id, () => inner.getGrant(id)),
    getAgentByClientId: (id: string) => read(agents, id, () => inner.getAgentByClientId(id)),
    getProvider: (id: string) => read(providers, id, () => inner.getProvider(id)),
    transaction: <T>(fn: (tx: Store) => Promise<T>) => {
      const written: ChangeKey[] = [];
      const note = (keys: ChangeKey[]) => void written.push(...keys);
      return inner
        .transaction((tx) => fn(wrapWrites(tx, async (keys) => note(keys), note)))
        .then(
          async (result) => {
            await changed(written);
            return result;
          },
          (err: unknown) => {
            forget(written);
            throw err;
          },
        );
    },
    close: async () => {
      await stop();
      await inner.close();
    },
  });
}

// internal

/** Store writes that change cached data, and the keys they touch. Every other known method changes none of it. */
const WRITES: Record<string, (...args: never[]) => ChangeKey[]> = {
  revokeToken: (hash: string) => [`t:${hash}`],
  revokeTokensOfClient: (clientId: string) => [`c:${clientId}`],
  updateAgent: (clientId: string) => [`c:${clientId}`],
  deleteAgent: (clientId: string) => [`c:${clientId}`],
  upsertProvider: (p: ProviderRecord) => [`p:${p.provider_id}`],
  deleteProvider: (id: string) => [`p:${id}`],
  claimGrantRefresh: (id: string) => [`g:${id}`],
  completeGrantRefresh: (id: string) => [`g:${id}`],
  releaseGrantRefresh: (id: string) => [`g:${id}`],
  deleteGrant: (id: string) => [`g:${id}`],
  // A sweep deletes rows by age, not by key: a swept token must read as unknown, not as its cached expired self.
  // Once a minute, so flushing costs one store read per live token per minute.
  sweep: () => ["*"],
};

/** Writes whose keys are known from what they return: the rows they changed. */
const RESULT_WRITES: Record<string, (result: never) => ChangeKey[]> = {
  revokeTokensWhere: (revoked: TokenRecord[]) => revoked.map((t) => `t:${t.token_hash}` as ChangeKey),
  revokeRefreshFamily: (revoked: TokenRecord[]) => revoked.map((t) => `t:${t.token_hash}` as ChangeKey),
  // DESIGN §23: a delegation chain's descendants die with an ancestor — the same invalidation as any revocation
  revokeDescendants: (revoked: TokenRecord[]) => revoked.map((t) => `t:${t.token_hash}` as ChangeKey),
};

/** Methods that change nothing cached. */
const NEUTRAL = new Set([
  "kind", "getMeta", "setMeta", "getProvider", "listProviders", "createAgent", "getAgentByClientId", "getAgentByAgentId", "lockAgent",
  "listAgents", "recordJti", "createSession", "getSession", "getSessionByHandle", "getSessionByUpstreamState",
  "bindSession", "markSessionConsented", "markSessionDenied", "consumeSession", "createToken", "getToken", "listTokens", "countTokens", "createConsoleSession", "getConsoleSession",
  "deleteConsoleSession", "createGrant",
  "getGrant", "appendAudit", "appendAuditBatch", "listAudit",
  // the audit chain (DESIGN §20): never cached
  "setMetaIfAbsent", "chainAuditBacklog", "auditHead", "listAuditChain", "addAuditCheckpoint", "listAuditCheckpoints", "lastAuditCheckpoint",
  "firstAuditSeq", "auditSweepPoint",
  // webhooks and their outbox (DESIGN §20): never cached
  "createWebhook", "listWebhooks", "getWebhook", "deleteWebhook", "enqueueWebhookEvent", "claimWebhookDeliveries", "finishWebhookDelivery",
  "countWebhookOutbox", "leaseRateCapacity", "transaction", "changes", "close",
  // per-request approvals (DESIGN §15): never cached — every resend reads and spends its approval in the database
  // refresh tokens (DESIGN §17, agents' and MCP clients'): never cached — every use spends its row in the database
  "createRefreshToken", "getRefreshToken", "spendRefreshToken",
  "createApproval", "getApproval", "countPendingApprovals", "listApprovals", "decideApproval", "consumeApproval",
  // budgets (DESIGN §16): never cached — every count is one conditional statement in the database
  "countBudget", "uncountBudget", "uncountCall", "listBudgetUsage",
  // the MCP front door (DESIGN §18): its clients and codes are never cached (its refresh tokens are the agents', above)
  "createMcpClient", "getMcpClient", "markMcpClientAuthorized", "createMcpAuthorization", "getMcpAuthorization", "setMcpAuthorizationCode",
  "consumeMcpCode", "findMcpApproval", "recordMcpSession", "getMcpSession",
  // enterprise and workload identity, delegation (DESIGN §23): never cached — issuers, workload agents and connections
  // are read at registration and token grants; shares count in the database like every budget
  "upsertTrustedIssuer", "getTrustedIssuer", "listTrustedIssuers", "deleteTrustedIssuer", "createWorkloadAgent", "getWorkloadAgent",
  "recordConnection", "getConnection", "findLiveGrant", "listResourceHolders", "recordAncestors", "openBudget", "carveBudget",
  // MCP's two wires (DESIGN §21): sessions ath holds and the answers relayed to them — never cached
  "updateMcpSessionHeld", "deleteMcpSession", "getMcpUpstreamSession", "putMcpUpstreamSession", "dropMcpUpstreamSession", "openMcpSessionInput",
  "answerMcpSessionInput", "takeMcpSessionInput",
]);

/**
 * `inner` with each write reporting the keys it touched once it resolved; an unknown method reports "everything".
 * A transaction started from it hands its function a store wrapped the same way, so nothing written escapes.
 */
function wrapWrites(inner: Store, changed: (keys: ChangeKey[]) => Promise<void>, forget: (keys: ChangeKey[]) => void): Store {
  const out: Record<string, unknown> = {};
  for (const name of methodNames(inner)) {
    const fn = (inner as unknown as Record<string, (...a: unknown[]) => unknown>)[name]!;
    const keys = WRITES[name];
    const resultKeys = RESULT_WRITES[name];
    if (name === "transaction") {
      out[name] = <T>(f: (tx: Store) => Promise<T>) => inner.transaction((tx) => f(wrapWrites(tx, changed, forget)));
    } else if (keys) {
      out[name] = async (...args: unknown[]) => {
        const touched = (keys as (...a: unknown[]) => ChangeKey[])(...args);
        let result: unknown;
        try {
          result = await fn.apply(inner, args);
        } catch (err) {
          forget(touched);
          throw err;
        }
        await changed(touched);
        return result;
      };
    } else if (resultKeys) {
      out[name] = async (...args: unknown[]) => {
        let result: unknown;
        try {
          result = await fn.apply(inner, args);
        } catch (err) {
          forget(["*"]); // which rows it may have changed is not known
          throw err;
        }
        await changed((resultKeys as (r: unknown) => ChangeKey[])(result));
        return result;
      };
    } else if (NEUTRAL.has(name)) {
      out[name] = fn.bind(inner);
    } else {
      out[name] = async (...args: unknown[]) => {
        try {
          return await fn.apply(inner, args);
        } catch (err) {
          forget(["*"]);
          throw err;
        } finally {
          await changed(["*"]);
        }
      };
    }
  }
  out.kind = inner.kind;
  return out as unknown as Store;
}

function methodNames(store: Store): string[] {
  const names = new Set<string>();
  for (let o: object | null = store; o && o !== Object.prototype; o = Object.getPrototypeOf(o)) {
    for (const k of Object.getOwnPropertyNames(o)) if (typeof (store as unknown as Record<string, unknown>)[k] === "function" && k !== "constructor") names.add(k);
  }
  return [...names];
}

/** A Map that drops its oldest entries beyond `max` (insertion order), telling `onDrop` of each it drops. */
class Bounded<V> {
  private readonly map = new Map<string, V>();
  constructor(
    private readonly max: number,
    private readonly onDrop: (key: string, value: V) => void = () => undefined,
  ) {}
  get(key: string): V | undefined {
    return this.map.get(key);
  }
  set(key: string, value: V): void {
    this.map.delete(key);
    this.map.set(key, value);
    if (this.map.size > this.max) {
      const [oldest, dropped] = this.map.entries().next().value as [string, V];
      this.map.delete(oldest);
      this.onDrop(oldest, dropped);
    }
  }
  delete(key: string): void {
    const value = this.map.get(key);
    if (value === undefined) return;
    this.map.delete(key);
    this.onDrop(key, value);
  }
  clear(): void {
    this.map.clear();
  }
}
