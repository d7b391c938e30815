/**
 * Rate limits (DESIGN §10): fixed windows of one unit (s, m, h), counted per key (client IP for `register`, client_id
 * for `auth` and `proxy`). Each instance admits from a local bucket of capacity it leased from the store
 * (`leaseRateCapacity`) in batches of a tenth of the limit: a request costs no store call while its bucket holds
 * capacity, and a lease never takes more than is left of the limit in that window — so any number of instances
 * sharing a database admit at most the limit together. What an instance leased and did not use is lost to the others
 * until the window ends: at most (batch − 1) per instance per key and window are refused early. When the store cannot
 * be reached, an instance admits on its own (at most the limit locally) rather than refusing every request.
 */
import { AthError } from "../../protocol/index.ts";
import type { Store } from "../../store/types.ts";
import type { Logger, RouteLimit, Limiter, Metrics } from "../context.ts";

/** `limit` requests per `windowMs`. */
export interface Rate {
  limit: number;
  windowMs: number;
}

/** A limit per budget; absent = off (`--rate-limit-… 0`). */
export type RateLimits = Partial<Record<RouteLimit, Rate>>;


/** `N/unit`, unit s|m|h, or `0` (off) → a Rate or null; anything else → undefined. */
export function parseRate(text: string): Rate | null | undefined {
  if (text === "0") return null;
  const m = /^([1-9]\d{0,8})\/(s|m|h)$/.exec(text);
  if (!m) return undefined;
  return { limit: Number(m[1]), windowMs: { s: 1000, m: 60_000, h: 3_600_000 }[m[2] as "s" | "m" | "h"] };
}

export function createLimiter(limits: RateLimits, deps: { store: Store; now: () => number; metrics: Metrics; log: Logger }): Limiter {
  /** Buckets per budget, by key: no key string joined per request (the store's key, `budget:key`, is made when leasing). */
  const byBudget = new Map<RouteLimit, Map<string, Bucket>>();
  let size = 0;
  let storeDown = false;
  /** Past this many buckets, those of ended windows are dropped; doubled when that frees too little (no scan per request). */
  let pruneAt = PRUNE_AT;

  async function lease(key: string, b: Bucket, rate: Rate): Promise<void> {
    const want = Math.min(batchOf(rate), rate.limit - b.leased);
    let granted: number;
    try {
      granted = await deps.store.leaseRateCapacity(key, b.start, want, rate.limit, b.end);
      storeDown = false;
    } catch (err) {
      // Availability over exactness: admit on this instance's own count until the store answers again.
      if (!storeDown) deps.log.warn("rate limits: the store is unavailable, limits hold per instance", { error: err instanceof Error ? err.message : String(err) });
      storeDown = true;
      granted = want;
    }
    b.left += granted;
    b.leased += granted;
    if (granted === 0 || b.leased >= rate.limit) b.spent = true;
  }

  /** Waits for capacity leased from the store (refusing once the window's limit is spent), then takes one. */
  async function leaseThenTake(budget: RouteLimit, k: string, b: Bucket, rate: Rate, now: number): Promise<void> {
    while (b.left <= 0) {
      if (b.spent) refuse(budget, rate, b.start, now, deps.metrics);
      const bucket = b;
      await (bucket.leasing ??= lease(k, bucket, rate).finally(() => (bucket.leasing = null)));
    }
    b.left--;
  }

  return {
    // Not an async function: a request its bucket has capacity for — nearly all — takes it with no promise.
    take(budget, key) {
      const rate = limits[budget];
      if (!rate) return;
      const now = deps.now();
      const start = now - (now % rate.windowMs);
      let buckets = byBudget.get(budget);
      if (buckets === undefined) byBudget.set(budget, (buckets = new Map()));
      let b = buckets.get(key);
      if (b === undefined || b.start !== start) {
        if (b === undefined && size >= pruneAt) {
          size = 0;
          for (const m of byBudget.values()) size += prune(m, now);
          pruneAt = Math.max(PRUNE_AT, size * 2);
        }
        if (b === undefined) size++;
        b = { start, end: start + rate.windowMs, left: 0, leased: 0, spent: false, leasing: null };
        buckets.set(key, b);
      }
      if (b.left > 0) {
        b.left--;
        return;
      }
      return leaseThenTake(budget, `${budget}:${key}`, b, rate, now);
    },
  };
}

// internal

interface Bucket {
  /** The window's start and end (epoch ms). */
  start: number;
  end: number;
  /** Leased and not yet used. */
  left: number;
  /** Leased in this window so far. */
  leased: number;
  /** Nothing more to lease in this window. */
  spent: boolean;
  leasing: Promise<void> | null;
}

/** Buckets kept before those of ended windows are dropped. */
const PRUNE_AT = 10_000;

/** A tenth of the limit per lease: ≤ 10 store writes per key, window and instance. */
function batchOf(rate: Rate): number {
  return Math.max(1, Math.ceil(rate.limit / 10));
}

/** Drops the buckets of ended windows; returns how many are left. */
function prune(buckets: Map<string, Bucket>, now: number): number {
  for (const [k, b] of buckets) if (b.end <= now) buckets.delete(k);
  return buckets.size;
}

function refuse(budget: RouteLimit, rate: Rate, start: number, now: number, metrics: Metrics): never {
  metrics.rateLimited.inc([budget]);
  const reset = Math.max(1, Math.ceil((start + rate.windowMs - now) / 1000));
  throw new AthError("RATE_LIMITED", `Too many ${budget} requests: the limit is ${rate.limit} per ${rate.windowMs / 1000} s`, { limit: budget, retry_after: reset }, {
    headers: {
      "retry-after": String(reset),
      "ratelimit-limit": String(rate.limit),
      "ratelimit-remaining": "0",
      "ratelimit-reset": String(reset),
    },
  });
}
