/** Agents (one row per registration) and the attestation replay cache. */
import { AGENT_COLUMNS, toAgent, values } from "../rows.ts";
import type { Store } from "../types.ts";
import { type Driver, insert, one } from "./driver.ts";

export function agentQueries(
  db: Driver,
): Pick<Store, "createAgent" | "getAgentByClientId" | "getAgentByAgentId" | "lockAgent" | "updateAgent" | "listAgents" | "deleteAgent" | "recordJti"> {
  return {
    async createAgent(a) {
      // No conflict target: a clash on either client_id or agent_id writes nothing.
      return (await db.run(insert("agents", AGENT_COLUMNS, "ON CONFLICT DO NOTHING"), values(a, AGENT_COLUMNS))) === 1;
    },
    async getAgentByClientId(clientId) {
      return one(db, "SELECT * FROM agents WHERE client_id = ?", [clientId], toAgent);
    },
    async getAgentByAgentId(agentId) {
      return one(db, "SELECT * FROM agents WHERE agent_id = ?", [agentId], toAgent);
    },
    async lockAgent(clientId) {
      // SQLite has no FOR UPDATE: its transactions hold the database's one write lock from BEGIN IMMEDIATE.
      const lock = db.kind === "postgres" ? " FOR UPDATE" : "";
      return one(db, `SELECT * FROM agents WHERE client_id = ?${lock}`, [clientId], toAgent);
    },
    async updateAgent(clientId, patch) {
      const changed = await db.run(
        `UPDATE agents SET status = COALESCE(?, status), approvals = COALESCE(?, approvals),
           approval_expires = COALESCE(?, approval_expires),
           approval_rules = CASE WHEN ? = 1 THEN ? ELSE approval_rules END,
           policy = CASE WHEN ? = 1 THEN ? ELSE policy END,
           budgets = CASE WHEN ? = 1 THEN ? ELSE budgets END,
           pending_approvals = CASE WHEN ? = 1 THEN ? ELSE pending_approvals END WHERE client_id = ?`,
        [
          patch.status ?? null,
          patch.approvals ? JSON.stringify(patch.approvals) : null,
          patch.approval_expires ?? null,
          patch.approval_rules === undefined ? 0 : 1,
          patch.approval_rules ? JSON.stringify(patch.approval_rules) : null,
          patch.policy === undefined ? 0 : 1,
          patch.policy ? JSON.stringify(patch.policy) : null,
          patch.budgets === undefined ? 0 : 1,
          patch.budgets ? JSON.stringify(patch.budgets) : null,
          patch.pending_approvals === undefined ? 0 : 1,
          patch.pending_approvals?.length ? JSON.stringify(patch.pending_approvals) : null,
          clientId,
        ],
      );
      return changed === 1;
    },
    async listAgents() {
      return (await db.all("SELECT * FROM agents ORDER BY created_at, client_id")).map(toAgent);
    },
    async deleteAgent(clientId) {
      // Its sessions and tokens go with it (ON DELETE CASCADE).
      return (await db.run("DELETE FROM agents WHERE client_id = ?", [clientId])) === 1;
    },
    async recordJti(agentId, jti, expiresAt, now) {
      // An expired entry is dead weight the sweeper has not reached yet: it may be taken over.
      const changed = await db.run(
        `INSERT INTO jti (agent_id, jti, expires_at) VALUES (?, ?, ?)
         ON CONFLICT (agent_id, jti) DO UPDATE SET expires_at = excluded.expires_at WHERE jti.expires_at <= ?`,
        [agentId, jti, expiresAt, now],
      );
      return changed === 1;
    },
  };
}
