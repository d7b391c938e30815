/**
 * The Store, written once in the SQL both SQLite (≥ 3.35) and PostgreSQL speak: every "only once" rule is a
 * single statement — a unique key, `INSERT … ON CONFLICT`, or `UPDATE … WHERE <state> … RETURNING` — so it
 * holds across connections and across `ath serve` instances. Drivers (sqlite.ts, postgres.ts) only run it.
 */
import {
  AGENT_COLUMNS, GRANT_COLUMNS, SESSION_COLUMNS, TOKEN_COLUMNS, type Row,
  toAgent, toAudit, toGrant, toProvider, toSession, toToken, values,
} from "./rows.ts";
import type { Store } from "./types.ts";

/** What a dialect must provide: `?` placeholders, rows back (also for `… RETURNING`), changed-row counts. */
export interface Driver {
  readonly kind: Store["kind"];
  all(sql: string, params?: unknown[]): Promise<Row[]>;
  run(sql: string, params?: unknown[]): Promise<number>;
  close(): Promise<void>;
}

const AUDIT_LIMIT_DEFAULT = 100;
const AUDIT_LIMIT_MAX = 1000;

export function sqlStore(db: Driver): Store {
  const one = async <T>(sql: string, params: unknown[], map: (r: Row) => T): Promise<T | null> => {
    const [row] = await db.all(sql, params);
    return row ? map(row) : null;
  };

  return {
    kind: db.kind,

    async getMeta(key) {
      return one("SELECT value FROM meta WHERE key = ?", [key], (r) => String(r.value));
    },
    async setMeta(key, value) {
      await db.run("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value", [key, value]);
    },

    async upsertProvider(p) {
      await db.run(
        `INSERT INTO providers (provider_id, config, client_secret_sealed, source, updated_at) VALUES (?, ?, ?, ?, ?)
         ON CONFLICT (provider_id) DO UPDATE SET config = excluded.config,
           client_secret_sealed = excluded.client_secret_sealed, source = excluded.source, updated_at = excluded.updated_at`,
        [p.provider_id, JSON.stringify(p.config), p.client_secret_sealed, p.source, p.updated_at],
      );
    },
    async getProvider(providerId) {
      return one("SELECT * FROM providers WHERE provider_id = ?", [providerId], toProvider);
    },
    async listProviders() {
      return (await db.all("SELECT * FROM providers ORDER BY provider_id")).map(toProvider);
    },
    async deleteProvider(providerId) {
      return (await db.run("DELETE FROM providers WHERE provider_id = ?", [providerId])) === 1;
    },

    async createAgent(a) {
      // No conflict target: a clash on either client_id or agent_id writes nothing.
      return (await db.run(insert("agents", AGENT_COLUMNS, "ON CONFLICT DO NOTHING"), values(a, AGENT_COLUMNS))) === 1;
    },
    async getAgentByClientId(clientId) {
      return one("SELECT * FROM agents WHERE client_id = ?", [clientId], toAgent);
    },
    async getAgentByAgentId(agentId) {
      return one("SELECT * FROM agents WHERE agent_id = ?", [agentId], toAgent);
    },
    async updateAgent(clientId, patch) {
      const changed = await db.run(
        `UPDATE agents SET status = COALESCE(?, status), approvals = COALESCE(?, approvals),
           approval_expires = COALESCE(?, approval_expires) WHERE client_id = ?`,
        [patch.status ?? null, patch.approvals ? JSON.stringify(patch.approvals) : null, patch.approval_expires ?? null, clientId],
      );
      return changed === 1;
    },
    async listAgents() {
      return (await db.all("SELECT * FROM agents ORDER BY created_at, client_id")).map(toAgent);
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

    async createSession(s) {
      await db.run(insert("sessions", SESSION_COLUMNS), values(s, SESSION_COLUMNS));
    },
    async getSession(sessionId) {
      return one("SELECT * FROM sessions WHERE session_id = ?", [sessionId], toSession);
    },
    async getSessionByHandle(handle) {
      return one("SELECT * FROM sessions WHERE handle = ?", [handle], toSession);
    },
    async getSessionByUpstreamState(state) {
      return one("SELECT * FROM sessions WHERE upstream_state = ?", [state], toSession);
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
        `UPDATE sessions SET status = 'used'
         WHERE session_id = ? AND client_id = ? AND status = 'consented' AND expires_at > ? RETURNING *`,
        [sessionId, clientId, now],
        toSession,
      );
      // RETURNING shows the row after the update; the caller gets it as it was consumed.
      return s && { ...s, status: "consented" };
    },

    async createToken(t) {
      await db.run(insert("tokens", TOKEN_COLUMNS), values(t, TOKEN_COLUMNS));
    },
    async getToken(tokenHash) {
      return one("SELECT * FROM tokens WHERE token_hash = ?", [tokenHash], toToken);
    },
    async revokeToken(tokenHash, now) {
      // COALESCE keeps the first revocation time: revoking twice is not a new event.
      return one(
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

    async createGrant(g) {
      await db.run(insert("grants", GRANT_COLUMNS), values(g, GRANT_COLUMNS));
    },
    async getGrant(grantId) {
      return one("SELECT * FROM grants WHERE grant_id = ?", [grantId], toGrant);
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
      return one("DELETE FROM grants WHERE grant_id = ? RETURNING *", [grantId], toGrant);
    },

    async appendAudit(e) {
      await db.run(
        "INSERT INTO audit (type, at, client_id, agent_id, provider_id, user_id, data) VALUES (?, ?, ?, ?, ?, ?, ?)",
        [e.type, e.at, e.client_id ?? null, e.agent_id ?? null, e.provider_id ?? null, e.user_id ?? null,
          e.data === undefined ? null : JSON.stringify(e.data)],
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

    async sweep(now, retainMs, auditRetainMs) {
      const cutoff = now - retainMs;
      const sessions = await db.run("DELETE FROM sessions WHERE expires_at <= ?", [now]);
      const jti = await db.run("DELETE FROM jti WHERE expires_at <= ?", [now]);
      const tokens = await db.run(
        "DELETE FROM tokens WHERE expires_at <= ? OR (revoked_at IS NOT NULL AND revoked_at <= ?)",
        [cutoff, cutoff],
      );
      // Kept for `retainMs` so the proxy can still say *why* (upstream_grant_revoked), and so a grant created
      // a moment before its session is marked consented is not taken for an orphan.
      const grants = await db.run(
        `DELETE FROM grants WHERE (status = 'dead' AND updated_at <= ?)
           OR (created_at <= ?
             AND NOT EXISTS (SELECT 1 FROM tokens t WHERE t.grant_id = grants.grant_id)
             AND NOT EXISTS (SELECT 1 FROM sessions s WHERE s.grant_id = grants.grant_id))`,
        [cutoff, cutoff],
      );
      const audit = auditRetainMs === undefined ? 0 : await db.run("DELETE FROM audit WHERE at <= ?", [now - auditRetainMs]);
      return { sessions, jti, tokens, grants, audit };
    },

    close: () => db.close(),
  };
}

// internal

function insert(table: string, columns: readonly string[], suffix = ""): string {
  return `INSERT INTO ${table} (${columns.join(", ")}) VALUES (${columns.map(() => "?").join(", ")}) ${suffix}`;
}
