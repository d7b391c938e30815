/**
 * Delegated tokens (DESIGN §23): each one's ancestors, one row per (ancestor, descendant) — so revoking any ancestor
 * reaches every descendant in one `UPDATE … WHERE token_hash IN (…) RETURNING` — and budget shares, kept in the
 * budgets' own rows: a share is opened at 0 used, and carving a child's share out of its parent's is one conditional
 * UPDATE on the parent's row, the very row each of the parent's calls counts against (store/sql/budgets.ts). Two
 * instances carving and counting at once serialize on that row: never past its limit.
 */
import { toToken } from "../rows.ts";
import type { Store } from "../types.ts";
import type { Driver } from "./driver.ts";

export function delegationQueries(db: Driver): Pick<Store, "recordAncestors" | "revokeDescendants" | "openBudget" | "carveBudget"> {
  return {
    async recordAncestors(tokenHash, ancestorIds, expiresAt, now) {
      await db.run("DELETE FROM token_ancestors WHERE expires_at <= ?", [now]);
      for (const id of new Set(ancestorIds)) {
        await db.run("INSERT INTO token_ancestors (ancestor_id, token_hash, expires_at) VALUES (?, ?, ?)", [id, tokenHash, expiresAt]);
      }
    },
    async revokeDescendants(tokenIds, now) {
      if (tokenIds.length === 0) return [];
      const rows = await db.all(
        `UPDATE tokens SET revoked_at = ?
         WHERE revoked_at IS NULL AND expires_at > ?
           AND token_hash IN (SELECT token_hash FROM token_ancestors WHERE ancestor_id IN (${tokenIds.map(() => "?").join(", ")}))
         RETURNING *`,
        [now, now, ...tokenIds],
      );
      return rows.map(toToken);
    },
    async openBudget(u) {
      await db.run(
        `INSERT INTO budget_usage (bkey, window_start, used, budget_limit, provider_id, client_id, user_id, rule, expires_at)
         VALUES (?, ?, 0, ?, ?, ?, ?, ?, ?)`,
        [u.bkey, u.window_start, u.limit, u.provider_id, u.client_id, u.user_id, u.rule, u.expires_at],
      );
    },
    async carveBudget(bkey, windowStart, n) {
      const rows = await db.all(
        "UPDATE budget_usage SET used = used + ? WHERE bkey = ? AND window_start = ? AND used + ? <= budget_limit RETURNING used",
        [n, bkey, windowStart, n],
      );
      return rows[0] ? Number(rows[0].used) : null;
    },
  };
}
