/** The sweep: rows past their life, deleted. */
import type { Store } from "../types.ts";
import type { Driver } from "./driver.ts";

export function sweepQueries(db: Driver): Pick<Store, "sweep"> {
  return {
    async sweep(now, retainMs, auditRetainMs) {
      const cutoff = now - retainMs;
      const sessions = await db.run("DELETE FROM sessions WHERE expires_at <= ?", [now]);
      const jti = await db.run("DELETE FROM jti WHERE expires_at <= ?", [now]);
      const tokens = await db.run(
        "DELETE FROM tokens WHERE expires_at <= ? OR (revoked_at IS NOT NULL AND revoked_at <= ?)",
        [cutoff, cutoff],
      );
      // Kept for `retainMs` so the proxy can still say *why* (upstream_grant_revoked), and so a grant created
      // a moment before its session is marked consented is not taken for an orphan.
      const grants = await db.run(
        `DELETE FROM grants WHERE (status = 'dead' AND updated_at <= ?)
           OR (created_at <= ?
             AND NOT EXISTS (SELECT 1 FROM tokens t WHERE t.grant_id = grants.grant_id)
             AND NOT EXISTS (SELECT 1 FROM sessions s WHERE s.grant_id = grants.grant_id))`,
        [cutoff, cutoff],
      );
      const audit = auditRetainMs === undefined ? 0 : await db.run("DELETE FROM audit WHERE at <= ?", [now - auditRetainMs]);
      return { sessions, jti, tokens, grants, audit };
    },

  };
}
