/** ATH tokens, looked up by the hash of the bearer secret. */
import { TOKEN_COLUMNS, toToken, values } from "../rows.ts";
import type { Store } from "../types.ts";
import { type Driver, insert, one } from "./driver.ts";

export function tokenQueries(db: Driver): Pick<Store, "createToken" | "getToken" | "revokeToken" | "revokeTokensOfClient"> {
  return {
    async createToken(t) {
      await db.run(insert("tokens", TOKEN_COLUMNS), values(t, TOKEN_COLUMNS));
    },
    async getToken(tokenHash) {
      return one(db, "SELECT * FROM tokens WHERE token_hash = ?", [tokenHash], toToken);
    },
    async revokeToken(tokenHash, now) {
      // COALESCE keeps the first revocation time: revoking twice is not a new event.
      return one(
        db,
        "UPDATE tokens SET revoked_at = COALESCE(revoked_at, ?) WHERE token_hash = ? RETURNING *",
        [now, tokenHash],
        toToken,
      );
    },
    async revokeTokensOfClient(clientId, now, providerId) {
      // CAST: PostgreSQL cannot infer the type of a parameter that is only tested for NULL.
      return db.run(
        `UPDATE tokens SET revoked_at = ? WHERE client_id = ? AND revoked_at IS NULL AND expires_at > ?
           AND (CAST(? AS TEXT) IS NULL OR provider_id = ?)`,
        [now, clientId, now, providerId ?? null, providerId ?? null],
      );
    },

  };
}
