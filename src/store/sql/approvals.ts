/** Per-request approvals (DESIGN §15): deciding and spending one are each a single guarded UPDATE … RETURNING. */
import { APPROVAL_COLUMNS, toApproval, values } from "../rows.ts";
import type { Store } from "../types.ts";
import { type Driver, insert, one } from "./driver.ts";

/** Approvals that expired longer ago than this are dropped when a new one is made: the table stays bounded. */
const KEEP_EXPIRED_MS = 24 * 3600 * 1000;

export function approvalQueries(db: Driver): Pick<Store, "createApproval" | "getApproval" | "countPendingApprovals" | "listApprovals" | "decideApproval" | "consumeApproval" | "findMcpApproval"> {
  return {
    async createApproval(a) {
      await db.run("DELETE FROM approvals WHERE expires_at < ?", [a.created_at - KEEP_EXPIRED_MS]);
      await db.run(insert("approvals", APPROVAL_COLUMNS), values(a, APPROVAL_COLUMNS));
    },
    async getApproval(approvalId) {
      return one(db, "SELECT * FROM approvals WHERE approval_id = ?", [approvalId], toApproval);
    },
    async countPendingApprovals(clientId, now) {
      const [row] = await db.all("SELECT COUNT(*) AS n FROM approvals WHERE client_id = ? AND status = 'pending' AND expires_at > ?", [clientId, now]);
      return Number(row?.n ?? 0);
    },
    async listApprovals(o) {
      const where: string[] = [];
      const params: unknown[] = [];
      if (o.status === "expired") {
        where.push("status IN ('pending', 'approved') AND expires_at <= ?");
        params.push(o.now);
      } else if (o.status === "pending" || o.status === "approved") {
        where.push("status = ? AND expires_at > ?");
        params.push(o.status, o.now);
      } else if (o.status) {
        where.push("status = ?");
        params.push(o.status);
      }
      if (o.after) {
        where.push("(created_at < ? OR (created_at = ? AND approval_id < ?))");
        params.push(o.after.created_at, o.after.created_at, o.after.approval_id);
      }
      const sql = `SELECT * FROM approvals ${where.length ? `WHERE ${where.join(" AND ")}` : ""}
        ORDER BY created_at DESC, approval_id DESC LIMIT ?`;
      return (await db.all(sql, [...params, o.limit])).map(toApproval);
    },
    async decideApproval(approvalId, decision, by, now) {
      return one(
        db,
        `UPDATE approvals SET status = ?, decided_by = ?, decided_at = ?
         WHERE approval_id = ? AND status = 'pending' AND expires_at > ? RETURNING *`,
        [decision, by, now, approvalId, now],
        toApproval,
      );
    },
    async consumeApproval(approvalId, m, now) {
      return one(
        db,
        `UPDATE approvals SET status = 'used', used_at = ?
         WHERE approval_id = ? AND status = 'approved' AND expires_at > ?
           AND client_id = ? AND user_id = ? AND provider_id = ? AND digest = ? RETURNING *`,
        [now, approvalId, now, m.client_id, m.user_id, m.provider_id, m.digest],
        toApproval,
      );
    },
    findMcpApproval: (m, now) =>
      one(
        db,
        `SELECT * FROM approvals WHERE client_id = ? AND user_id = ? AND provider_id = ? AND digest = ?
           AND status IN ('approved', 'pending', 'denied') AND expires_at > ?
         ORDER BY CASE status WHEN 'approved' THEN 0 ELSE 1 END, created_at DESC LIMIT 1`,
        [m.client_id, m.user_id, m.provider_id, m.digest, now],
        toApproval,
      ),
  };
}
