/** Consent sessions: each state change is one guarded UPDATE, so only one request can make it. */
import { SESSION_COLUMNS, toSession, values } from "../rows.ts";
import type { Store } from "../types.ts";
import { type Driver, insert, one } from "./driver.ts";

export function sessionQueries(db: Driver): Pick<Store, "createSession" | "getSession" | "getSessionByHandle" | "getSessionByUpstreamState" | "bindSession" | "markSessionConsented" | "markSessionDenied" | "consumeSession"> {
  return {
    async createSession(s) {
      await db.run(insert("sessions", SESSION_COLUMNS), values(s, SESSION_COLUMNS));
    },
    async getSession(sessionId) {
      return one(db, "SELECT * FROM sessions WHERE session_id = ?", [sessionId], toSession);
    },
    async getSessionByHandle(handle) {
      return one(db, "SELECT * FROM sessions WHERE handle = ?", [handle], toSession);
    },
    async getSessionByUpstreamState(state) {
      return one(db, "SELECT * FROM sessions WHERE upstream_state = ?", [state], toSession);
    },
    async bindSession(sessionId, bindingHash) {
      const changed = await db.run(
        `UPDATE sessions SET binding_hash = ?
         WHERE session_id = ? AND status = 'pending' AND (binding_hash IS NULL OR binding_hash = ?)`,
        [bindingHash, sessionId, bindingHash],
      );
      return changed === 1;
    },
    async markSessionConsented(sessionId, c) {
      const changed = await db.run(
        `UPDATE sessions SET status = 'consented', code_hash = ?, user_id = ?, consented_scopes = ?, grant_id = ?,
           expires_at = ? WHERE session_id = ? AND status = 'pending'`,
        [c.code_hash, c.user_id, JSON.stringify(c.consented_scopes), c.grant_id, c.expires_at, sessionId],
      );
      return changed === 1;
    },
    async markSessionDenied(sessionId) {
      return (await db.run("UPDATE sessions SET status = 'denied' WHERE session_id = ? AND status = 'pending'", [sessionId])) === 1;
    },
    async consumeSession(sessionId, clientId, now) {
      const s = await one(
        db,
        `UPDATE sessions SET status = 'used'
         WHERE session_id = ? AND client_id = ? AND status = 'consented' AND expires_at > ? RETURNING *`,
        [sessionId, clientId, now],
        toSession,
      );
      // RETURNING shows the row after the update; the caller gets it as it was consumed.
      return s && { ...s, status: "consented" };
    },

  };
}
