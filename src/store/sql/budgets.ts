/**
 * Budget usage (DESIGN §16): one row per budget, subject and window, counted by a single conditional upsert — exact
 * across connections and `ath serve` instances with no lease: of N concurrent calls against a budget with L left,
 * exactly L get a count back. A count taken for a call (`callId`) is kept beside it in `budget_calls` — in the same
 * statement on PostgreSQL (a data-modifying CTE), the same transaction on SQLite — so it is given back once, by whichever
 * instance tries, even when the answer to the count itself was lost (DESIGN §24).
 */
import type { BudgetUsage, Store } from "../types.ts";
import type { Driver } from "./driver.ts";
import { num, str, strOrNull, type Row } from "../rows.ts";

/** A call's count is kept this long (ms) for its give-back, and pruned by one count in PRUNE_CHANCE. */
const CALL_KEEP_MS = 3_600_000;
const PRUNE_CHANCE = 0.002;

export function budgetQueries(db: Driver): Pick<Store, "countBudget" | "uncountBudget" | "uncountCall" | "listBudgetUsage"> {
  const countSql = (force: boolean | undefined) => `INSERT INTO budget_usage (bkey, window_start, used, budget_limit, provider_id, client_id, user_id, rule, expires_at)
         VALUES (?, ?, 1, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (bkey, window_start) DO UPDATE SET used = budget_usage.used + 1, budget_limit = excluded.budget_limit
         ${force ? "" : "WHERE budget_usage.used < excluded.budget_limit"}
         RETURNING used`;
  return {
    async uncountCall(callId, u) {
      if (db.kind === "postgres") {
        return (
          (await db.run(
            `WITH gone AS (DELETE FROM budget_calls WHERE call_id = ? AND bkey = ? AND window_start = ? RETURNING bkey, window_start)
             UPDATE budget_usage SET used = budget_usage.used - 1 FROM gone
             WHERE budget_usage.bkey = gone.bkey AND budget_usage.window_start = gone.window_start AND budget_usage.used > 0`,
            [callId, u.bkey, u.window_start],
          )) === 1
        );
      }
      return db.transaction(async (tx) => {
        if ((await tx.run("DELETE FROM budget_calls WHERE call_id = ? AND bkey = ? AND window_start = ?", [callId, u.bkey, u.window_start])) === 0) return false;
        return (await tx.run("UPDATE budget_usage SET used = used - 1 WHERE bkey = ? AND window_start = ? AND used > 0", [u.bkey, u.window_start])) === 1;
      });
    },
    async uncountBudget(u) {
      await db.run("UPDATE budget_usage SET used = used - 1 WHERE bkey = ? AND window_start = ? AND used > 0", [u.bkey, u.window_start]);
    },
    async countBudget(u, force, callId) {
      if (!force && u.limit <= 0) return null;
      // the WHERE of ON CONFLICT DO UPDATE makes the increment conditional: no row back means the budget is spent
      const params = [u.bkey, u.window_start, u.limit, u.provider_id, u.client_id, u.user_id, u.rule, u.expires_at];
      if (callId === undefined) {
        const rows = await db.all(countSql(force), params);
        return rows[0] ? Number(rows[0].used) : null;
      }
      const now = Date.now();
      if (Math.random() < PRUNE_CHANCE) await db.run("DELETE FROM budget_calls WHERE at < ?", [now - CALL_KEEP_MS]);
      if (db.kind === "postgres") {
        // data-modifying CTEs run once and to completion, read or not: the call's row exactly when the count was taken
        const rows = await db.all(
          `WITH counted AS (${countSql(force)}),
           kept AS (INSERT INTO budget_calls (call_id, bkey, window_start, at) SELECT ?, ?, ?, ? FROM counted ON CONFLICT DO NOTHING RETURNING 1)
           SELECT used FROM counted`,
          [...params, callId, u.bkey, u.window_start, now],
        );
        return rows[0] ? Number(rows[0].used) : null;
      }
      return db.transaction(async (tx) => {
        const rows = await tx.all(countSql(force), params);
        if (!rows[0]) return null;
        await tx.run("INSERT INTO budget_calls (call_id, bkey, window_start, at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING", [callId, u.bkey, u.window_start, now]);
        return Number(rows[0].used);
      });
    },
    async listBudgetUsage(o) {
      const where = ["expires_at > ?"];
      const params: unknown[] = [o.now];
      if (o.client_id) {
        where.push("client_id = ?");
        params.push(o.client_id);
      }
      if (o.provider_id) {
        where.push("provider_id = ?");
        params.push(o.provider_id);
      }
      const rows = await db.all(`SELECT * FROM budget_usage WHERE ${where.join(" AND ")} ORDER BY provider_id, client_id, rule, window_start LIMIT 1000`, params);
      return rows.map(toUsage);
    },
  };
}

function toUsage(r: Row): BudgetUsage {
  return {
    bkey: str(r.bkey),
    window_start: num(r.window_start),
    used: num(r.used),
    limit: num(r.budget_limit),
    provider_id: str(r.provider_id),
    client_id: str(r.client_id),
    user_id: strOrNull(r.user_id),
    rule: str(r.rule),
    expires_at: num(r.expires_at),
  };
}
