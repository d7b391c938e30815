/**
 * The schema, as an ordered list of migrations shared by both dialects. Version N is `migrations(d)[N - 1]`;
 * the applied version lives in `meta.schema_version`. Append new migrations, never edit a released one.
 *
 * Times are epoch-ms integers (BIGINT on PostgreSQL), arrays/objects are JSON text, so one set of queries
 * (sql-store.ts) serves both databases.
 */

export type Dialect = "sqlite" | "postgres";

export const SCHEMA_VERSION_KEY = "schema_version";

/** Created before anything else: it holds the schema version the migrations are measured against. */
export const META_TABLE = "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)";

export function migrations(d: Dialect): string[] {
  const int = d === "sqlite" ? "INTEGER" : "BIGINT";
  const autoId = d === "sqlite" ? "INTEGER PRIMARY KEY AUTOINCREMENT" : "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY";
  return [
    `
CREATE TABLE providers (
  provider_id TEXT PRIMARY KEY,
  config TEXT NOT NULL,
  client_secret_sealed TEXT NOT NULL,
  source TEXT NOT NULL CHECK (source IN ('file', 'admin')),
  updated_at ${int} NOT NULL
);
CREATE TABLE agents (
  client_id TEXT PRIMARY KEY,
  client_secret_hash TEXT NOT NULL,
  agent_id TEXT NOT NULL UNIQUE,
  developer TEXT NOT NULL,
  purpose TEXT,
  redirect_uris TEXT,
  status TEXT NOT NULL,
  approvals TEXT NOT NULL,
  approval_expires ${int} NOT NULL,
  created_at ${int} NOT NULL
);
CREATE TABLE jti (
  agent_id TEXT NOT NULL,
  jti TEXT NOT NULL,
  expires_at ${int} NOT NULL,
  PRIMARY KEY (agent_id, jti)
);
CREATE INDEX jti_expires ON jti (expires_at);
CREATE TABLE sessions (
  session_id TEXT PRIMARY KEY,
  handle TEXT NOT NULL UNIQUE,
  client_id TEXT NOT NULL REFERENCES agents (client_id) ON DELETE CASCADE,
  agent_id TEXT NOT NULL,
  provider_id TEXT NOT NULL,
  requested_scopes TEXT NOT NULL,
  agent_state TEXT NOT NULL,
  user_redirect_uri TEXT,
  resource TEXT,
  pkce_verifier_sealed TEXT NOT NULL,
  code_challenge TEXT NOT NULL,
  upstream_state TEXT NOT NULL UNIQUE,
  status TEXT NOT NULL CHECK (status IN ('pending', 'consented', 'denied', 'used')),
  binding_hash TEXT,
  code_hash TEXT,
  user_id TEXT,
  consented_scopes TEXT,
  grant_id TEXT,
  created_at ${int} NOT NULL,
  expires_at ${int} NOT NULL
);
CREATE INDEX sessions_expires ON sessions (expires_at);
CREATE INDEX sessions_grant ON sessions (grant_id);
CREATE TABLE tokens (
  token_hash TEXT PRIMARY KEY,
  client_id TEXT NOT NULL REFERENCES agents (client_id) ON DELETE CASCADE,
  agent_id TEXT NOT NULL,
  user_id TEXT NOT NULL,
  provider_id TEXT NOT NULL,
  scopes TEXT NOT NULL,
  grant_id TEXT,
  created_at ${int} NOT NULL,
  expires_at ${int} NOT NULL,
  revoked_at ${int}
);
CREATE INDEX tokens_client ON tokens (client_id, provider_id);
CREATE INDEX tokens_grant ON tokens (grant_id);
CREATE INDEX tokens_expires ON tokens (expires_at);
CREATE TABLE grants (
  grant_id TEXT PRIMARY KEY,
  provider_id TEXT NOT NULL,
  user_id TEXT NOT NULL,
  agent_id TEXT NOT NULL,
  access_token_sealed TEXT NOT NULL,
  refresh_token_sealed TEXT,
  expires_at ${int},
  scope TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('live', 'dead')),
  version INTEGER NOT NULL,
  refresh_owner TEXT,
  refresh_lease_until ${int},
  created_at ${int} NOT NULL,
  updated_at ${int} NOT NULL
);
CREATE TABLE audit (
  id ${autoId},
  type TEXT NOT NULL,
  at ${int} NOT NULL,
  client_id TEXT,
  agent_id TEXT,
  provider_id TEXT,
  user_id TEXT,
  data TEXT
);
CREATE INDEX audit_type ON audit (type, id);
`,
    // 2: the sweeper deletes audit events by age
    `CREATE INDEX audit_at ON audit (at);`,
    // 3: the sweeper picks its batches through an index on the column that ages each row (DESIGN §14)
    `CREATE INDEX tokens_revoked ON tokens (revoked_at);
CREATE INDEX grants_dead ON grants (status, updated_at);
CREATE INDEX grants_created ON grants (created_at);`,
    // 4: every token gets a public token_id (DESIGN §9), existing rows a random one; the admin API pages tokens newest
    // first by (created_at, token_id) and audit events by id, with the filters it offers; the admin console's sign-in
    // sessions (by the hash of their id)
    `ALTER TABLE tokens ADD COLUMN token_id TEXT;
UPDATE tokens SET token_id = 'ath_tkid_' || ${d === "sqlite" ? "lower(hex(randomblob(16)))" : "replace(gen_random_uuid()::text, '-', '')"} WHERE token_id IS NULL;
CREATE UNIQUE INDEX tokens_id ON tokens (token_id);
CREATE INDEX tokens_created ON tokens (created_at, token_id);
CREATE INDEX tokens_user ON tokens (user_id);
CREATE INDEX audit_client ON audit (client_id, id);
CREATE INDEX audit_agent ON audit (agent_id, id);
CREATE TABLE console_sessions (
  id_hash TEXT PRIMARY KEY,
  created_at ${int} NOT NULL,
  expires_at ${int} NOT NULL
);
CREATE INDEX console_sessions_expires ON console_sessions (expires_at);`,
    // 5: rate-limit capacity leased by instances, per limit key and window (DESIGN §10)
    `CREATE TABLE rate_leases (
  rkey TEXT NOT NULL,
  window_start ${int} NOT NULL,
  used INTEGER NOT NULL,
  granted INTEGER NOT NULL,
  expires_at ${int} NOT NULL,
  PRIMARY KEY (rkey, window_start)
);
CREATE INDEX rate_leases_expires ON rate_leases (expires_at);`,
    // 6: the sweeper deletes agents that never got an approved scope, by age (DESIGN §14): a partial index holds only
    // those, so a sweep never walks the approved ones (its predicate is UNSCOPED_AGENT in sql/sweep.ts, verbatim)
    // — and deleting an agent cascades to its sessions, found by client_id
    `CREATE INDEX agents_unscoped ON agents (created_at) WHERE status <> 'pending' AND approvals NOT LIKE '%"approved_scopes":["%';
CREATE INDEX sessions_client ON sessions (client_id);`,
    // 7: per-request approvals (DESIGN §15), and an agent's own approval rules
    `CREATE TABLE approvals (
  approval_id TEXT PRIMARY KEY,
  client_id TEXT NOT NULL,
  agent_id TEXT NOT NULL,
  user_id TEXT NOT NULL,
  provider_id TEXT NOT NULL,
  token_id TEXT NOT NULL,
  approver TEXT NOT NULL CHECK (approver IN ('user', 'admin')),
  method TEXT NOT NULL,
  path TEXT NOT NULL,
  query TEXT NOT NULL,
  digest TEXT NOT NULL,
  body_sealed TEXT,
  body_bytes ${int} NOT NULL,
  content_type TEXT,
  status TEXT NOT NULL CHECK (status IN ('pending', 'approved', 'denied', 'used')),
  decided_by TEXT,
  decided_at ${int},
  used_at ${int},
  created_at ${int} NOT NULL,
  expires_at ${int} NOT NULL
);
CREATE INDEX approvals_created ON approvals (created_at, approval_id);
CREATE INDEX approvals_expires ON approvals (expires_at);
CREATE INDEX approvals_client ON approvals (client_id, status, expires_at);
ALTER TABLE agents ADD COLUMN approval_rules TEXT;`,
    // policy (DESIGN §16): an approval keeps the bound headers it was made for (sealed, shown on its page); an agent's
    // own policy and budgets; budget usage, one row per budget and window, counted by one conditional upsert
    `ALTER TABLE approvals ADD COLUMN headers_sealed TEXT;
ALTER TABLE agents ADD COLUMN policy TEXT;
ALTER TABLE agents ADD COLUMN budgets TEXT;
CREATE TABLE budget_usage (
  bkey TEXT NOT NULL,
  window_start ${int} NOT NULL,
  used ${int} NOT NULL,
  budget_limit ${int} NOT NULL,
  provider_id TEXT NOT NULL,
  client_id TEXT NOT NULL,
  user_id TEXT,
  rule TEXT NOT NULL,
  expires_at ${int} NOT NULL,
  PRIMARY KEY (bkey, window_start)
);
CREATE INDEX budget_usage_expires ON budget_usage (expires_at);`,
    // 9: the MCP front door (DESIGN §18): dynamically registered MCP clients, their authorization requests (each one a
    // Phase B session), and the refresh tokens ath gives them
    `CREATE TABLE mcp_clients (
  client_id TEXT PRIMARY KEY,
  client_secret_hash TEXT,
  metadata TEXT NOT NULL,
  created_at ${int} NOT NULL
);
CREATE TABLE mcp_authorizations (
  session_id TEXT PRIMARY KEY,
  client_id TEXT NOT NULL,
  agent_client_id TEXT NOT NULL,
  redirect_uri TEXT NOT NULL,
  state TEXT,
  code_challenge TEXT NOT NULL,
  resource TEXT NOT NULL,
  code_hash TEXT UNIQUE,
  created_at ${int} NOT NULL,
  expires_at ${int} NOT NULL
);
CREATE INDEX mcp_authorizations_expires ON mcp_authorizations (expires_at);
CREATE TABLE mcp_refresh_tokens (
  refresh_hash TEXT PRIMARY KEY,
  family_id TEXT NOT NULL,
  client_id TEXT NOT NULL,
  agent_client_id TEXT NOT NULL,
  agent_id TEXT NOT NULL,
  user_id TEXT NOT NULL,
  provider_id TEXT NOT NULL,
  resource TEXT NOT NULL,
  scopes TEXT NOT NULL,
  grant_id TEXT,
  access_token_hash TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('live', 'spent', 'revoked')),
  spent_at ${int},
  created_at ${int} NOT NULL,
  expires_at ${int} NOT NULL
);
CREATE INDEX mcp_refresh_family ON mcp_refresh_tokens (family_id);
CREATE INDEX mcp_refresh_expires ON mcp_refresh_tokens (expires_at);
CREATE INDEX approvals_digest ON approvals (client_id, digest);
CREATE TABLE mcp_sessions (
  session_key TEXT PRIMARY KEY,
  client_id TEXT NOT NULL,
  url_elicitation INTEGER NOT NULL,
  created_at ${int} NOT NULL
);
CREATE INDEX mcp_sessions_created ON mcp_sessions (created_at);`,
    // 8: evidence (DESIGN §20). The audit hash chain: each record's place (seq), its predecessor's hash and its own; the head of
    // the chain in one row that every append locks (so instances never fork it); the signed checkpoints. Rows written
    // before this migration get no seq here (SQL cannot compute the JCS hash): the gateway chains them, in id order,
    // ahead of anything new, at its first start (store.chainAuditBacklog). Webhook subscriptions (the secret sealed)
    // and their outbox: one row per event and endpoint, delivered in id order per endpoint under a lease.
    `ALTER TABLE audit ADD COLUMN seq ${int};
ALTER TABLE audit ADD COLUMN prev_hash TEXT;
ALTER TABLE audit ADD COLUMN hash TEXT;
CREATE UNIQUE INDEX audit_seq ON audit (seq);
CREATE TABLE audit_head (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  seq ${int} NOT NULL,
  hash TEXT NOT NULL
);
INSERT INTO audit_head (id, seq, hash) VALUES (1, 0, '${"0".repeat(64)}');
CREATE TABLE audit_checkpoints (
  seq ${int} PRIMARY KEY,
  hash TEXT NOT NULL,
  time ${int} NOT NULL,
  signature TEXT NOT NULL,
  kid TEXT NOT NULL
);
CREATE INDEX audit_checkpoints_time ON audit_checkpoints (time);
CREATE TABLE webhooks (
  webhook_id TEXT PRIMARY KEY,
  url TEXT NOT NULL,
  events TEXT NOT NULL,
  secret_sealed TEXT NOT NULL,
  created_at ${int} NOT NULL
);
CREATE TABLE webhook_outbox (
  id ${autoId},
  webhook_id TEXT NOT NULL REFERENCES webhooks (webhook_id) ON DELETE CASCADE,
  event_id TEXT NOT NULL,
  body TEXT NOT NULL,
  created_at ${int} NOT NULL,
  attempts INTEGER NOT NULL,
  next_at ${int} NOT NULL,
  lease_owner TEXT,
  lease_until ${int},
  state TEXT NOT NULL CHECK (state IN ('pending', 'delivered', 'failed'))
);
CREATE INDEX webhook_outbox_pending ON webhook_outbox (state, webhook_id, id);
CREATE INDEX webhook_outbox_created ON webhook_outbox (created_at);`,
    // 8: refresh tokens in families, and DPoP binding (DESIGN §17); pending additions to an agent's providers
    `CREATE TABLE refresh_tokens (
  refresh_hash TEXT PRIMARY KEY,
  family_id TEXT NOT NULL,
  client_id TEXT NOT NULL REFERENCES agents (client_id) ON DELETE CASCADE,
  agent_id TEXT NOT NULL,
  user_id TEXT NOT NULL,
  provider_id TEXT NOT NULL,
  scopes TEXT NOT NULL,
  grant_id TEXT,
  jkt TEXT,
  family_expires_at ${int} NOT NULL,
  expires_at ${int} NOT NULL,
  created_at ${int} NOT NULL,
  spent_at ${int},
  revoked_at ${int}
);
CREATE INDEX refresh_family ON refresh_tokens (family_id);
CREATE INDEX refresh_client ON refresh_tokens (client_id, provider_id);
CREATE INDEX refresh_grant ON refresh_tokens (grant_id);
CREATE INDEX refresh_family_expires ON refresh_tokens (family_expires_at);
CREATE INDEX refresh_revoked ON refresh_tokens (revoked_at);
ALTER TABLE tokens ADD COLUMN family_id TEXT;
ALTER TABLE tokens ADD COLUMN jkt TEXT;
CREATE INDEX tokens_family ON tokens (family_id);
ALTER TABLE agents ADD COLUMN pending_approvals TEXT;`,
    // n: an MCP client's refresh family ends --refresh-ttl after the consent, each refresh token --refresh-idle after it
    // was issued (DESIGN §17 for the MCP front door's clients, §18)
    `ALTER TABLE mcp_refresh_tokens ADD COLUMN family_expires_at ${int};`,
    // 13: one refresh-token aggregate (DESIGN §17, §18): MCP clients' refresh tokens move into refresh_tokens, keyed by
    // the agent record each client acts as (so they cascade with it and are swept like the agents'), with the OAuth
    // client_id and the resource beside. A row's state becomes the agents' columns: spent keeps spent_at; revoked gets
    // revoked_at = the migration's time (the old table kept no revocation time); a row without family_expires_at (made
    // before migration 12) ends at its own expiry. Rows whose agent record is gone are dead and not moved. Their access
    // tokens join the family, so a family still dies whole. Registered clients get authorized_at (the sweeper deletes
    // those that never complete an authorization); those that already started one are taken as authorized (the old
    // schema cannot tell whether they finished).
    `ALTER TABLE refresh_tokens ADD COLUMN oauth_client_id TEXT;
ALTER TABLE refresh_tokens ADD COLUMN resource TEXT;
INSERT INTO refresh_tokens (refresh_hash, family_id, client_id, oauth_client_id, resource, agent_id, user_id, provider_id, scopes,
  grant_id, jkt, family_expires_at, expires_at, created_at, spent_at, revoked_at)
SELECT m.refresh_hash, m.family_id, m.agent_client_id, m.client_id, m.resource, m.agent_id, m.user_id, m.provider_id, m.scopes,
  m.grant_id, NULL, COALESCE(m.family_expires_at, m.expires_at), m.expires_at, m.created_at,
  CASE WHEN m.status = 'live' THEN NULL ELSE m.spent_at END,
  CASE WHEN m.status = 'revoked' THEN ${nowMs(d)} ELSE NULL END
FROM mcp_refresh_tokens m
WHERE m.agent_client_id IN (SELECT client_id FROM agents)
  AND m.refresh_hash NOT IN (SELECT refresh_hash FROM refresh_tokens);
UPDATE tokens SET family_id = (SELECT MIN(m.family_id) FROM mcp_refresh_tokens m WHERE m.access_token_hash = tokens.token_hash)
WHERE family_id IS NULL AND token_hash IN (SELECT access_token_hash FROM mcp_refresh_tokens);
DROP TABLE mcp_refresh_tokens;
ALTER TABLE mcp_clients ADD COLUMN authorized_at ${int};
UPDATE mcp_clients SET authorized_at = created_at WHERE client_id IN (SELECT client_id FROM agents);
CREATE INDEX mcp_clients_unused ON mcp_clients (created_at) WHERE authorized_at IS NULL;`,
    // enterprise and workload identity, and delegation (DESIGN §23) — one self-contained step: trusted issuers (the
    // providers file's and the admin API's); agents registered with a workload JWT (the issuer they keep using, the key
    // they proved); the person an ID-JAG connection session is for; upstream grants found by (agent, person, provider);
    // a delegated token's chain and budget share (tokens.delegation, JSON) and its ancestors, one row each, so revoking
    // any of them reaches every descendant in one statement. Rows of the last two tables are dropped once expired by the
    // next insert (store/sql/identity.ts, store/sql/delegations.ts).
    `CREATE TABLE trusted_issuers (
  issuer TEXT PRIMARY KEY,
  config TEXT NOT NULL,
  source TEXT NOT NULL CHECK (source IN ('file', 'admin')),
  updated_at ${int} NOT NULL
);
CREATE TABLE workload_agents (
  client_id TEXT PRIMARY KEY REFERENCES agents (client_id) ON DELETE CASCADE,
  issuer TEXT NOT NULL,
  jkt TEXT
);
CREATE TABLE idjag_connections (
  session_id TEXT PRIMARY KEY,
  person TEXT NOT NULL,
  expires_at ${int} NOT NULL
);
CREATE INDEX idjag_connections_expires ON idjag_connections (expires_at);
CREATE INDEX grants_holder ON grants (agent_id, user_id, provider_id);
ALTER TABLE tokens ADD COLUMN delegation TEXT;
CREATE TABLE token_ancestors (
  ancestor_id TEXT NOT NULL,
  token_hash TEXT NOT NULL,
  expires_at ${int} NOT NULL,
  PRIMARY KEY (ancestor_id, token_hash)
);
CREATE INDEX token_ancestors_expires ON token_ancestors (expires_at);`,
    // MCP's two wires (DESIGN §21, issue 35 #9): a session is bound to the person as well as the client (user_id; rows
    // from before have none and answer as unknown sessions: the client opens a new one). `held`: a session ath keeps
    // itself (a 2025 client in front of a 2026-only upstream) — what the client declared, as JSON. The upstream
    // sessions ath holds for 2026 clients in front of a 2025-only upstream, one per (provider, person, client), its id
    // sealed: any instance finds it, re-creates it on the upstream's 404. And the answers a 2025 client posts to
    // requests ath pushed on a held session, relayed to whichever instance waits for them.
    `ALTER TABLE mcp_sessions ADD COLUMN user_id TEXT;
ALTER TABLE mcp_sessions ADD COLUMN held TEXT;
CREATE TABLE mcp_upstream_sessions (
  session_key TEXT PRIMARY KEY,
  session_sealed TEXT NOT NULL,
  opened TEXT NOT NULL,
  created_at ${int} NOT NULL,
  used_at ${int} NOT NULL
);
CREATE INDEX mcp_upstream_sessions_used ON mcp_upstream_sessions (used_at);
CREATE TABLE mcp_session_inputs (
  input_key TEXT PRIMARY KEY,
  answer_sealed TEXT,
  created_at ${int} NOT NULL
);
CREATE INDEX mcp_session_inputs_created ON mcp_session_inputs (created_at);`,
    // Many instances and faults (DESIGN §24): the audit batches written, by the id the writing instance gave each, so a
    // batch retried after a COMMIT whose answer was lost (a connection reset) is not written twice; and each budgeted
    // call's counts, so a count given back for a call never sent is given back once, whichever instance tries and how
    // often. Rows are dropped some time after (store/sql/audit.ts, store/sql/budgets.ts).
    `CREATE TABLE audit_batches (
  batch_id TEXT PRIMARY KEY,
  at ${int} NOT NULL
);
CREATE INDEX audit_batches_at ON audit_batches (at);
CREATE TABLE budget_calls (
  call_id TEXT NOT NULL,
  bkey TEXT NOT NULL,
  window_start ${int} NOT NULL,
  at ${int} NOT NULL,
  PRIMARY KEY (call_id, bkey, window_start)
);
CREATE INDEX budget_calls_at ON budget_calls (at);`,
    // One MCP URL for many servers (DESIGN §22; numbered 17 in the plan, appended last): the RFC 8707 resource an MCP
    // client's access token opens — `{base_url}/mcp/{id}`, `{base_url}/mcp` or `{base_url}/mcp/g/{group}` — copied
    // from its refresh family, so the door checks the audience without reading the family. Null for an ATH agent's
    // token and for MCP tokens minted before (their resource is their provider's /mcp/{id}).
    `ALTER TABLE tokens ADD COLUMN resource TEXT;`,
  ];
}

// internal

/** The current time in epoch ms, in SQL. */
function nowMs(d: Dialect): string {
  return d === "sqlite" ? "CAST(strftime('%s', 'now') AS INTEGER) * 1000" : "CAST(EXTRACT(EPOCH FROM now()) * 1000 AS BIGINT)";
}
