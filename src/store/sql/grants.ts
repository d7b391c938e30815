/** Upstream grants and their single-flight refresh lease (compare-and-set on version and owner). */
import { GRANT_COLUMNS, toGrant, values } from "../rows.ts";
import type { Store } from "../types.ts";
import { type Driver, insert, one } from "./driver.ts";

export function grantQueries(db: Driver): Pick<Store, "createGrant" | "getGrant" | "claimGrantRefresh" | "completeGrantRefresh" | "releaseGrantRefresh" | "deleteGrant"> {
  return {
    async createGrant(g) {
      await db.run(insert("grants", GRANT_COLUMNS), values(g, GRANT_COLUMNS));
    },
    async getGrant(grantId) {
      return one(db, "SELECT * FROM grants WHERE grant_id = ?", [grantId], toGrant);
    },
    async claimGrantRefresh(grantId, version, owner, now, leaseMs) {
      const changed = await db.run(
        `UPDATE grants SET refresh_owner = ?, refresh_lease_until = ?
         WHERE grant_id = ? AND version = ? AND status = 'live' AND (refresh_lease_until IS NULL OR refresh_lease_until <= ?)`,
        [owner, now + leaseMs, grantId, version, now],
      );
      return changed === 1;
    },
    async completeGrantRefresh(grantId, owner, u, now) {
      const changed = await db.run(
        `UPDATE grants SET access_token_sealed = ?, refresh_token_sealed = ?, expires_at = ?, scope = ?,
           version = version + 1, refresh_owner = NULL, refresh_lease_until = NULL, updated_at = ?
         WHERE grant_id = ? AND refresh_owner = ? AND status = 'live'`,
        [u.access_token_sealed, u.refresh_token_sealed, u.expires_at, JSON.stringify(u.scope), now, grantId, owner],
      );
      return changed === 1;
    },
    async releaseGrantRefresh(grantId, owner, dead, now) {
      await db.run(
        `UPDATE grants SET refresh_owner = NULL, refresh_lease_until = NULL, status = ?, updated_at = ?
         WHERE grant_id = ? AND refresh_owner = ?`,
        [dead ? "dead" : "live", now, grantId, owner],
      );
    },
    async deleteGrant(grantId) {
      return one(db, "DELETE FROM grants WHERE grant_id = ? RETURNING *", [grantId], toGrant);
    },

  };
}
