/**
 * Refresh tokens (DESIGN §17) of agents and MCP clients alike (§18: their rows carry `oauth_client_id` and
 * `resource`), looked up by the hash of the secret. Spending is one `UPDATE … WHERE spent_at IS NULL
 * … RETURNING`, so two presentations racing — on one instance or two — spend it once; a family dies in two statements
 * (its refresh tokens, then its access tokens), both run inside the caller's transaction when there is one.
 */
import { REFRESH_COLUMNS, toRefreshToken, toToken, values } from "../rows.ts";
import type { Store } from "../types.ts";
import { type Driver, insert, one } from "./driver.ts";

export function refreshQueries(db: Driver): Pick<Store, "createRefreshToken" | "getRefreshToken" | "spendRefreshToken" | "revokeRefreshFamily" | "listResourceHolders"> {
  return {
    async listResourceHolders(resources, now) {
      if (resources.length === 0) return [];
      const rows = await db.all(
        `SELECT DISTINCT client_id, agent_id, user_id, resource FROM refresh_tokens
          WHERE resource IN (${resources.map(() => "?").join(", ")}) AND revoked_at IS NULL AND family_expires_at > ?
          ORDER BY resource, client_id, user_id LIMIT 1000`,
        [...resources, now],
      );
      return rows.map((r) => ({ client_id: String(r.client_id), agent_id: String(r.agent_id), user_id: String(r.user_id), resource: String(r.resource) }));
    },
    async createRefreshToken(r) {
      await db.run(insert("refresh_tokens", REFRESH_COLUMNS), values(r, REFRESH_COLUMNS));
    },
    async getRefreshToken(refreshHash) {
      return one(db, "SELECT * FROM refresh_tokens WHERE refresh_hash = ?", [refreshHash], toRefreshToken);
    },
    async spendRefreshToken(refreshHash, now) {
      return one(
        db,
        "UPDATE refresh_tokens SET spent_at = ? WHERE refresh_hash = ? AND spent_at IS NULL AND revoked_at IS NULL RETURNING *",
        [now, refreshHash],
        toRefreshToken,
      );
    },
    async revokeRefreshFamily(familyId, now) {
      await db.run("UPDATE refresh_tokens SET revoked_at = ? WHERE family_id = ? AND revoked_at IS NULL", [now, familyId]);
      const rows = await db.all(
        "UPDATE tokens SET revoked_at = ? WHERE family_id = ? AND revoked_at IS NULL AND expires_at > ? RETURNING *",
        [now, familyId, now],
      );
      return rows.map(toToken);
    },
  };
}
