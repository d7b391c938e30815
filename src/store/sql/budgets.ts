/**
 * Budget usage (DESIGN §16): one row per budget, subject and window, counted by a single conditional upsert — exact
 * across connections and `ath serve` instances with no lease: of N concurrent calls against a budget with L left,
 * exactly L get a count back.
 */
import type { BudgetUsage, Store } from "../types.ts";
import type { Driver } from "./driver.ts";
import { num, str, strOrNull, type Row } from "../rows.ts";

export function budgetQueries(db: Driver): Pick<Store, "countBudget" | "uncountBudget" | "listBudgetUsage"> {
  return {
    async uncountBudget(u) {
      await db.run("UPDATE budget_usage SET used = used - 1 WHERE bkey = ? AND window_start = ? AND used > 0", [u.bkey, u.window_start]);
    },
    async countBudget(u, force) {
      if (!force && u.limit <= 0) return null;
      // the WHERE of ON CONFLICT DO UPDATE makes the increment conditional: no row back means the budget is spent
      const rows = await db.all(
        `INSERT INTO budget_usage (bkey, window_start, used, budget_limit, provider_id, client_id, user_id, rule, expires_at)
         VALUES (?, ?, 1, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (bkey, window_start) DO UPDATE SET used = budget_usage.used + 1, budget_limit = excluded.budget_limit
         ${force ? "" : "WHERE budget_usage.used < excluded.budget_limit"}
         RETURNING used`,
        [u.bkey, u.window_start, u.limit, u.provider_id, u.client_id, u.user_id, u.rule, u.expires_at],
      );
      return rows[0] ? Number(rows[0].used) : null;
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
