/**
 * The MCP front door's own rows (DESIGN §18): its registered clients, their authorization requests, what a client
 * declared for a session. Every "only once" (a code) is one guarded UPDATE … RETURNING. Its refresh tokens are the
 * agents' (sql/refresh.ts).
 */
import type { McpAuthorizationRecord, McpClientRecord, McpStore } from "../mcp-types.ts";
import { json, num, numOrNull, str, strOrNull, type Row, values } from "../rows.ts";
import { type Driver, insert, one } from "./driver.ts";
import { mcpWireQueries } from "./mcp-wires.ts";

const CLIENT_COLUMNS = ["client_id", "client_secret_hash", "metadata", "created_at", "authorized_at"] as const satisfies readonly (keyof McpClientRecord)[];
const AUTHORIZATION_COLUMNS = [
  "session_id", "client_id", "agent_client_id", "redirect_uri", "state", "code_challenge", "resource", "code_hash", "created_at", "expires_at",
] as const satisfies readonly (keyof McpAuthorizationRecord)[];

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
    async markMcpClientAuthorized(id, now) {
      await db.run("UPDATE mcp_clients SET authorized_at = ? WHERE client_id = ? AND authorized_at IS NULL", [now, id]);
    },
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
    async recordMcpSession(m) {
      await db.run("DELETE FROM mcp_sessions WHERE created_at < ?", [m.created_at - SESSION_KEEP_MS]);
      await db.run(
        `INSERT INTO mcp_sessions (session_key, client_id, user_id, url_elicitation, held, created_at) VALUES (?, ?, ?, ?, ?, ?)
         ON CONFLICT (session_key) DO UPDATE SET client_id = excluded.client_id, user_id = excluded.user_id, url_elicitation = excluded.url_elicitation,
           held = excluded.held, created_at = excluded.created_at`,
        [m.session_key, m.client_id, m.user_id, m.url_elicitation ? 1 : 0, m.held, m.created_at],
      );
    },
    getMcpSession: (key) =>
      one(db, "SELECT * FROM mcp_sessions WHERE session_key = ?", [key], (r) => ({
        session_key: str(r.session_key),
        client_id: str(r.client_id),
        user_id: strOrNull(r.user_id),
        url_elicitation: num(r.url_elicitation) === 1,
        held: strOrNull(r.held),
        created_at: num(r.created_at),
      })),
    ...mcpWireQueries(db),
  };
}

// internal

function toClient(r: Row): McpClientRecord {
  return {
    client_id: str(r.client_id),
    client_secret_hash: strOrNull(r.client_secret_hash),
    metadata: json(r.metadata),
    created_at: num(r.created_at),
    authorized_at: numOrNull(r.authorized_at),
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
