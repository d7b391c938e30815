/** ATH tokens, looked up by the hash of the bearer secret. */
import { TOKEN_COLUMNS, toToken, values } from "../rows.ts";
import type { Store, TokenFilter, TokenState } from "../types.ts";
import { type Driver, insert, one } from "./driver.ts";

export function tokenQueries(db: Driver): Pick<Store, "createToken" | "getToken" | "revokeToken" | "revokeTokensOfClient" | "listTokens" | "revokeTokensWhere" | "countTokens"> {
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
    async listTokens(filter, o) {
      const where = matching(filter);
      if (o.state) where.push(STATE[o.state](o.now));
      if (o.after) where.push({ sql: "(created_at < ? OR (created_at = ? AND token_id < ?))", params: [o.after.created_at, o.after.created_at, o.after.token_id] });
      const rows = await db.all(
        `SELECT * FROM tokens ${whereClause(where)} ORDER BY created_at DESC, token_id DESC LIMIT ?`,
        [...where.flatMap((w) => w.params), o.limit],
      );
      return rows.map(toToken);
    },
    async countTokens(now) {
      const [row] = await db.all(
        `SELECT
           SUM(CASE WHEN revoked_at IS NULL AND expires_at > ? THEN 1 ELSE 0 END) AS active,
           SUM(CASE WHEN revoked_at IS NOT NULL THEN 1 ELSE 0 END) AS revoked,
           SUM(CASE WHEN revoked_at IS NULL AND expires_at <= ? THEN 1 ELSE 0 END) AS expired
         FROM tokens`,
        [now, now],
      );
      return { active: Number(row?.active ?? 0), revoked: Number(row?.revoked ?? 0), expired: Number(row?.expired ?? 0) };
    },
    async revokeTokensWhere(filter, now) {
      const where = matching(filter);
      if (where.length === 0) throw new Error("revokeTokensWhere needs at least one field");
      // The refresh families of what matches die with it (DESIGN §17) — found by the family's own columns (its access
      // tokens may be swept long before it ends) or, for one token_id, through that token.
      const families = familyMatching(filter);
      const dead = await db.all(
        `UPDATE refresh_tokens SET revoked_at = ? ${whereClause(families)} AND revoked_at IS NULL RETURNING family_id`,
        [now, ...families.flatMap((w) => w.params)],
      );
      const familyIds = [...new Set(dead.map((r) => String(r.family_id)))];
      const matched: Condition =
        familyIds.length === 0
          ? { sql: where.map((w) => `(${w.sql})`).join(" AND "), params: where.flatMap((w) => w.params) }
          : {
              sql: `(${where.map((w) => `(${w.sql})`).join(" AND ")}) OR family_id IN (${familyIds.map(() => "?").join(", ")})`,
              params: [...where.flatMap((w) => w.params), ...familyIds],
            };
      const conditions = [matched, STATE.active(now)];
      const rows = await db.all(`UPDATE tokens SET revoked_at = ? ${whereClause(conditions)} RETURNING *`, [now, ...conditions.flatMap((w) => w.params)]);
      return rows.map(toToken);
    },
  };
}

// internal

interface Condition {
  sql: string;
  params: unknown[];
}

const FILTER_COLUMNS = ["token_id", "client_id", "agent_id", "user_id", "provider_id"] as const satisfies readonly (keyof TokenFilter)[];

function matching(filter: TokenFilter): Condition[] {
  return FILTER_COLUMNS.filter((c) => filter[c] !== undefined).map((c) => ({ sql: `${c} = ?`, params: [filter[c]] }));
}

/** The refresh tokens `filter` names: by their own columns, and for `token_id` through that access token's family. */
function familyMatching(filter: TokenFilter): Condition[] {
  const own = FILTER_COLUMNS.filter((c) => c !== "token_id" && filter[c] !== undefined).map((c) => ({ sql: `${c} = ?`, params: [filter[c]] }));
  if (filter.token_id !== undefined) own.push({ sql: "family_id IN (SELECT family_id FROM tokens WHERE token_id = ? AND family_id IS NOT NULL)", params: [filter.token_id] });
  return own;
}

const STATE: Record<TokenState, (now: number) => Condition> = {
  active: (now) => ({ sql: "revoked_at IS NULL AND expires_at > ?", params: [now] }),
  revoked: () => ({ sql: "revoked_at IS NOT NULL", params: [] }),
  expired: (now) => ({ sql: "revoked_at IS NULL AND expires_at <= ?", params: [now] }),
};

function whereClause(where: Condition[]): string {
  return where.length === 0 ? "" : `WHERE ${where.map((w) => `(${w.sql})`).join(" AND ")}`;
}
