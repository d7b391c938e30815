/**
 * Refresh tokens (DESIGN §17) of agents and MCP clients alike (§18: their rows carry `oauth_client_id` and
 * `resource`), looked up by the hash of the secret. Spending is one `UPDATE … WHERE spent_at IS NULL
 * … RETURNING`, so two presentations racing — on one instance or two — spend it once; a family dies in two statements
 * (its refresh tokens, then its access tokens), both run inside the caller's transaction when there is one.
 */
import { REFRESH_COLUMNS, toRefreshToken, toToken, values } from "../rows.ts";
import type { Store } from "../types.ts";
import { type Driver, insert, one } from "./driver.ts";

export function refreshQueries(db: Driver): Pick<Store, "createRefreshToken" | "getRefreshToken" | "spendRefreshToken" | "revokeRefreshFamily"> {
  return {
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
