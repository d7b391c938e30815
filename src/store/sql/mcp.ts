/** The MCP front door's rows (DESIGN §18): every "only once" (a code, a refresh token) is one guarded UPDATE … RETURNING. */
import type { McpAuthorizationRecord, McpClientRecord, McpRefreshRecord, McpStore } from "../mcp-types.ts";
import { json, num, numOrNull, str, strOrNull, toApproval, type Row, values } from "../rows.ts";
import { type Driver, insert, one } from "./driver.ts";

const CLIENT_COLUMNS = ["client_id", "client_secret_hash", "metadata", "created_at"] as const satisfies readonly (keyof McpClientRecord)[];
const AUTHORIZATION_COLUMNS = [
  "session_id", "client_id", "agent_client_id", "redirect_uri", "state", "code_challenge", "resource", "code_hash", "created_at", "expires_at",
] as const satisfies readonly (keyof McpAuthorizationRecord)[];
const REFRESH_COLUMNS = [
  "refresh_hash", "family_id", "client_id", "agent_client_id", "agent_id", "user_id", "provider_id", "resource", "scopes", "grant_id",
  "access_token_hash", "status", "spent_at", "created_at", "expires_at", "family_expires_at",
] as const satisfies readonly (keyof McpRefreshRecord)[];

/** Requests older than this past their expiry are dropped when a new one is made: the table stays bounded. */
const KEEP_EXPIRED_MS = 24 * 3600 * 1000;
/** What a client declared for a session is kept this long. */
const SESSION_KEEP_MS = 7 * 24 * 3600 * 1000;

export function mcpQueries(db: Driver): McpStore {
  return {
    async createMcpClient(c) {
      await db.run(insert("mcp_clients", CLIENT_COLUMNS), values(c, CLIENT_COLUMNS));
    },
    getMcpClient: (id) => one(db, "SELECT * FROM mcp_clients WHERE client_id = ?", [id], toClient),
    async createMcpAuthorization(a) {
      await db.run("DELETE FROM mcp_authorizations WHERE expires_at < ?", [a.created_at - KEEP_EXPIRED_MS]);
      await db.run(insert("mcp_authorizations", AUTHORIZATION_COLUMNS), values(a, AUTHORIZATION_COLUMNS));
    },
    getMcpAuthorization: (id) => one(db, "SELECT * FROM mcp_authorizations WHERE session_id = ?", [id], toAuthorization),
    async setMcpAuthorizationCode(id, codeHash, expiresAt) {
      return (await db.run("UPDATE mcp_authorizations SET code_hash = ?, expires_at = ? WHERE session_id = ? AND code_hash IS NULL", [codeHash, expiresAt, id])) === 1;
    },
    consumeMcpCode: (codeHash, now) =>
      one(db, "UPDATE mcp_authorizations SET code_hash = NULL, expires_at = ? WHERE code_hash = ? AND expires_at > ? RETURNING *", [now, codeHash, now], toAuthorization),
    async createMcpRefresh(r) {
      await db.run("DELETE FROM mcp_refresh_tokens WHERE expires_at < ?", [r.created_at - KEEP_EXPIRED_MS]);
      await db.run(insert("mcp_refresh_tokens", REFRESH_COLUMNS), values(r, REFRESH_COLUMNS));
    },
    getMcpRefresh: (hash) => one(db, "SELECT * FROM mcp_refresh_tokens WHERE refresh_hash = ?", [hash], toRefresh),
    spendMcpRefresh: (hash, now) =>
      one(db, "UPDATE mcp_refresh_tokens SET status = 'spent', spent_at = ? WHERE refresh_hash = ? AND status = 'live' AND expires_at > ? RETURNING *", [now, hash, now], toRefresh),
    async revokeMcpFamily(familyId) {
      return (await db.all("UPDATE mcp_refresh_tokens SET status = 'revoked' WHERE family_id = ? RETURNING *", [familyId])).map(toRefresh);
    },
    async recordMcpSession(m) {
      await db.run("DELETE FROM mcp_sessions WHERE created_at < ?", [m.created_at - SESSION_KEEP_MS]);
      await db.run(
        `INSERT INTO mcp_sessions (session_key, client_id, url_elicitation, created_at) VALUES (?, ?, ?, ?)
         ON CONFLICT (session_key) DO UPDATE SET client_id = excluded.client_id, url_elicitation = excluded.url_elicitation, created_at = excluded.created_at`,
        [m.session_key, m.client_id, m.url_elicitation ? 1 : 0, m.created_at],
      );
    },
    getMcpSession: (key) =>
      one(db, "SELECT client_id, url_elicitation FROM mcp_sessions WHERE session_key = ?", [key], (r) => ({ client_id: str(r.client_id), url_elicitation: num(r.url_elicitation) === 1 })),
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

// internal

function toClient(r: Row): McpClientRecord {
  return {
    client_id: str(r.client_id),
    client_secret_hash: strOrNull(r.client_secret_hash),
    metadata: json(r.metadata),
    created_at: num(r.created_at),
  };
}

function toAuthorization(r: Row): McpAuthorizationRecord {
  return {
    session_id: str(r.session_id),
    client_id: str(r.client_id),
    agent_client_id: str(r.agent_client_id),
    redirect_uri: str(r.redirect_uri),
    state: strOrNull(r.state),
    code_challenge: str(r.code_challenge),
    resource: str(r.resource),
    code_hash: strOrNull(r.code_hash),
    created_at: num(r.created_at),
    expires_at: num(r.expires_at),
  };
}

function toRefresh(r: Row): McpRefreshRecord {
  return {
    refresh_hash: str(r.refresh_hash),
    family_id: str(r.family_id),
    client_id: str(r.client_id),
    agent_client_id: str(r.agent_client_id),
    agent_id: str(r.agent_id),
    user_id: str(r.user_id),
    provider_id: str(r.provider_id),
    resource: str(r.resource),
    scopes: json(r.scopes) as string[],
    grant_id: strOrNull(r.grant_id),
    access_token_hash: str(r.access_token_hash),
    status: str(r.status) as McpRefreshRecord["status"],
    spent_at: numOrNull(r.spent_at),
    created_at: num(r.created_at),
    expires_at: num(r.expires_at),
    family_expires_at: num(r.family_expires_at ?? r.expires_at),
  };
}
