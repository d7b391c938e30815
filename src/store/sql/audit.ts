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
      const where: { sql: string; param: unknown }[] = [];
      for (const c of ["type", "client_id", "agent_id", "user_id", "provider_id"] as const) {
        if (opts[c] !== undefined) where.push({ sql: `${c} = ?`, param: opts[c] });
      }
      if (opts.since !== undefined) where.push({ sql: "at >= ?", param: opts.since });
      if (opts.until !== undefined) where.push({ sql: "at < ?", param: opts.until });
      if (opts.beforeId !== undefined) where.push({ sql: "id < ?", param: opts.beforeId });
      const clause = where.length === 0 ? "" : `WHERE ${where.map((w) => w.sql).join(" AND ")}`;
      const rows = await db.all(`SELECT * FROM audit ${clause} ORDER BY id DESC LIMIT ?`, [...where.map((w) => w.param), limit]);
      return rows.map(toAudit);
    },

  };
}
