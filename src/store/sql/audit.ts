/** The audit trail: append and read, newest first. */
import { toAudit } from "../rows.ts";
import type { Store } from "../types.ts";
import type { Driver } from "./driver.ts";

const AUDIT_LIMIT_DEFAULT = 100;
const AUDIT_LIMIT_MAX = 1000;

export function auditQueries(db: Driver): Pick<Store, "appendAudit" | "listAudit"> {
  return {
    async appendAudit(...events) {
      if (events.length === 0) return;
      // One statement per batch (the gateway's audit queue writes them in batches).
      await db.run(
        `INSERT INTO audit (type, at, client_id, agent_id, provider_id, user_id, data) VALUES ${events.map(() => "(?, ?, ?, ?, ?, ?, ?)").join(", ")}`,
        events.flatMap((e) => [e.type, e.at, e.client_id ?? null, e.agent_id ?? null, e.provider_id ?? null, e.user_id ?? null,
          e.data === undefined ? null : JSON.stringify(e.data)]),
      );
    },
    async listAudit(opts = {}) {
      const limit = Math.min(Math.max(Math.trunc(opts.limit ?? AUDIT_LIMIT_DEFAULT), 1), AUDIT_LIMIT_MAX);
      const rows = await db.all(
        "SELECT * FROM audit WHERE (CAST(? AS TEXT) IS NULL OR type = ?) ORDER BY id DESC LIMIT ?",
        [opts.type ?? null, opts.type ?? null, limit],
      );
      return rows.map(toAudit);
    },

  };
}
