/**
 * Enterprise and workload identity (DESIGN §23): trusted issuers (config as JSON text), the agents that registered
 * with a workload JWT, the person an ID-JAG connection session is for (dropped once expired by the next record), and
 * the upstream grant of (agent, person, provider) an ID-JAG is honoured with.
 */
import { json, num, str, strOrNull, toGrant, type Row } from "../rows.ts";
import type { TrustedIssuerRecord } from "../identity-types.ts";
import type { Store } from "../types.ts";
import { type Driver, one } from "./driver.ts";

export function identityQueries(
  db: Driver,
): Pick<Store, "upsertTrustedIssuer" | "getTrustedIssuer" | "listTrustedIssuers" | "deleteTrustedIssuer" | "createWorkloadAgent" | "getWorkloadAgent" | "recordConnection" | "getConnection" | "findLiveGrant"> {
  return {
    async upsertTrustedIssuer(t) {
      await db.run(
        `INSERT INTO trusted_issuers (issuer, config, source, updated_at) VALUES (?, ?, ?, ?)
         ON CONFLICT (issuer) DO UPDATE SET config = excluded.config, source = excluded.source, updated_at = excluded.updated_at`,
        [t.issuer, JSON.stringify(t.config), t.source, t.updated_at],
      );
    },
    async getTrustedIssuer(issuer) {
      return one(db, "SELECT * FROM trusted_issuers WHERE issuer = ?", [issuer], toIssuer);
    },
    async listTrustedIssuers() {
      return (await db.all("SELECT * FROM trusted_issuers ORDER BY issuer")).map(toIssuer);
    },
    async deleteTrustedIssuer(issuer) {
      return (await db.run("DELETE FROM trusted_issuers WHERE issuer = ?", [issuer])) === 1;
    },
    async createWorkloadAgent(w) {
      await db.run("INSERT INTO workload_agents (client_id, issuer, jkt) VALUES (?, ?, ?)", [w.client_id, w.issuer, w.jkt]);
    },
    async getWorkloadAgent(clientId) {
      return one(db, "SELECT * FROM workload_agents WHERE client_id = ?", [clientId], (r) => ({ client_id: str(r.client_id), issuer: str(r.issuer), jkt: strOrNull(r.jkt) }));
    },
    async recordConnection(c, now) {
      await db.run("DELETE FROM idjag_connections WHERE expires_at <= ?", [now]);
      await db.run("INSERT INTO idjag_connections (session_id, person, expires_at) VALUES (?, ?, ?)", [c.session_id, c.person, c.expires_at]);
    },
    async getConnection(sessionId) {
      return one(db, "SELECT person FROM idjag_connections WHERE session_id = ?", [sessionId], (r) => ({ person: str(r.person) }));
    },
    async findLiveGrant(agentId, userId, providerId) {
      return one(
        db,
        "SELECT * FROM grants WHERE agent_id = ? AND user_id = ? AND provider_id = ? AND status = 'live' ORDER BY created_at DESC LIMIT 1",
        [agentId, userId, providerId],
        toGrant,
      );
    },
  };
}

// internal

function toIssuer(r: Row): TrustedIssuerRecord {
  return { issuer: str(r.issuer), config: json(r.config), source: str(r.source) as TrustedIssuerRecord["source"], updated_at: num(r.updated_at) };
}
