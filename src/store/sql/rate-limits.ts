/**
 * Rate-limit capacity shared by `ath serve` instances (DESIGN §10): one row per (limit key, window) counts what was
 * handed out; an instance leases a batch of it in one statement, never more than is left of the limit — so together
 * the instances admit at most the limit per window. The gateway's side is ops/rate-limit.ts.
 */
import type { Store } from "../types.ts";
import type { Driver } from "./driver.ts";

export function rateLimitQueries(db: Driver): Pick<Store, "leaseRateCapacity"> {
  return {
    async leaseRateCapacity(key, windowStart, want, limit, expiresAt) {
      const first = Math.max(0, Math.min(want, limit));
      // On conflict the right-hand sides read the row as it was: `granted` is what this statement added to `used`.
      const grant = "CASE WHEN rate_leases.used >= ? THEN 0 WHEN rate_leases.used + ? > ? THEN ? - rate_leases.used ELSE ? END";
      const rows = await db.all(
        `INSERT INTO rate_leases (rkey, window_start, used, granted, expires_at) VALUES (?, ?, ?, ?, ?)
         ON CONFLICT (rkey, window_start) DO UPDATE SET used = rate_leases.used + ${grant}, granted = ${grant}
         RETURNING granted`,
        [key, windowStart, first, first, expiresAt, limit, want, limit, limit, want, limit, want, limit, limit, want],
      );
      return Number(rows[0]?.granted ?? 0);
    },
  };
}
