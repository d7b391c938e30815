/**
 * The Store interface: every piece of gateway state, spoken in domain verbs. Every rule that must hold across
 * requests — and across several `ath serve` instances — is enforced here atomically (unique keys,
 * `UPDATE … WHERE … RETURNING`, row versions), never by a read-then-write in a handler.
 *
 * Times are epoch milliseconds. Secrets arrive already hashed (`*_hash`: hex SHA-256) or sealed (`*_sealed`:
 * AES-256-GCM blobs from gateway/sealing.ts); the store never sees a plaintext secret.
 */
import type { AgentStatus, ApprovalRule, BudgetRule, PolicyRule, DeveloperInfo, ProviderApproval, ProviderConfig } from "../protocol/index.ts";
import type { Delegation, IdentityStore } from "./identity-types.ts";
import type { McpStore } from "./mcp-types.ts";
import type { ChangeFeed } from "./notify.ts";

export interface ProviderRecord {
  provider_id: string;
  /** The config with `client_secret` replaced by "" — the secret lives in `client_secret_sealed`. */
  config: ProviderConfig;
  client_secret_sealed: string;
  /** "file" (upserted from --providers at every start) or "admin" (added through the admin API). */
  source: "file" | "admin";
  updated_at: number;
}

export interface AgentRecord {
  client_id: string;
  client_secret_hash: string;
  agent_id: string;
  developer: DeveloperInfo;
  purpose: string | null;
  redirect_uris: string[] | null;
  status: AgentStatus | "suspended";
  approvals: ProviderApproval[];
  approval_expires: number;
  created_at: number;
  /** The agent's own approval rules (DESIGN §15), added to its providers'; set by an admin. */
  approval_rules?: ApprovalRule[] | null;
  /** The agent's own policy rules (DESIGN §16), after its providers'; set by an admin. */
  policy?: PolicyRule[] | null;
  /** The agent's own budgets (DESIGN §16), added to its providers'; set by an admin. */
  budgets?: BudgetRule[] | null;
  /** Scopes the agent asked to add that wait for an admin (DESIGN §17); absent when none. */
  pending_approvals?: { provider_id: string; scopes: string[] }[] | null;
}

export type SessionStatus = "pending" | "consented" | "denied" | "used";

export interface SessionRecord {
  session_id: string;
  /** Random handle in the consent URL; distinct from session_id so the URL never reveals it. */
  handle: string;
  client_id: string;
  agent_id: string;
  provider_id: string;
  requested_scopes: string[];
  agent_state: string;
  user_redirect_uri: string | null;
  resource: string | null;
  pkce_verifier_sealed: string;
  code_challenge: string;
  /** The `state` sent to the provider; the callback finds the session by it. */
  upstream_state: string;
  status: SessionStatus;
  /** Hash of the browser-binding cookie, set when the consent page is first opened. */
  binding_hash: string | null;
  /** Set at consent: */
  code_hash: string | null;
  user_id: string | null;
  consented_scopes: string[] | null;
  grant_id: string | null;
  created_at: number;
  expires_at: number;
}

export interface TokenRecord {
  token_hash: string;
  /** Public id (`ath_tkid_…`): names the token to operators; never a secret, never accepted as a bearer. */
  token_id: string;
  client_id: string;
  agent_id: string;
  user_id: string;
  provider_id: string;
  scopes: string[];
  grant_id: string | null;
  created_at: number;
  expires_at: number;
  revoked_at: number | null;
  /** The refresh family the token descends from (DESIGN §17); absent for tokens minted before refresh existed. */
  family_id?: string | null;
  /** RFC 9449: the JWK thumbprint of the key a DPoP-bound token is bound to; absent for a bearer token. */
  jkt?: string | null;
  /** DESIGN §23: set on a token minted by delegation — its ancestors and budget share. */
  delegation?: Delegation | null;
  /**
   * DESIGN §18, §22: the RFC 8707 resource an MCP client's token opens, as its family names it (`{base_url}/mcp/{id}`,
   * `{base_url}/mcp`, `{base_url}/mcp/g/{group}`); absent for an ATH agent's token and MCP tokens minted before it was kept.
   */
  resource?: string | null;
}

/**
 * One refresh token (DESIGN §17), of an ATH agent or of an MCP client (DESIGN §18) alike: one table, one rotation. A
 * family is every access and refresh token descended from one consent: each use spends the presented refresh token
 * and mints its successor in the same family, and a family dies whole.
 */
export interface RefreshTokenRecord {
  refresh_hash: string;
  family_id: string;
  /** The agent record the tokens are issued to (an MCP client's own record, `mcp_…`, for an MCP client). */
  client_id: string;
  /** An MCP client's OAuth client_id (`mcp_…`, or its metadata document's URL); null for an ATH agent's family. */
  oauth_client_id: string | null;
  /** The resource an MCP client's tokens open (RFC 8707: `{base_url}/mcp/{id}`); null for an ATH agent's family. */
  resource: string | null;
  agent_id: string;
  user_id: string;
  provider_id: string;
  /** The most a refresh with this token may ask for (narrowed families stay narrowed). */
  scopes: string[];
  grant_id: string | null;
  /** Set when the family is DPoP-bound: refreshes need a proof by this key. */
  jkt: string | null;
  /** `--refresh-ttl` from the consent: no member outlives it. */
  family_expires_at: number;
  /** The earlier of `family_expires_at` and `--refresh-idle` from this token's minting. */
  expires_at: number;
  created_at: number;
  /** Set by the one use; presenting it again is reuse (or, within 2 s, a race). */
  spent_at: number | null;
  revoked_at: number | null;
}

/** One upstream grant per consent; never shared between agents or users. */
export interface GrantRecord {
  grant_id: string;
  provider_id: string;
  user_id: string;
  agent_id: string;
  access_token_sealed: string;
  refresh_token_sealed: string | null;
  /** Upstream access-token expiry, or null when the provider did not say. */
  expires_at: number | null;
  scope: string[];
  status: "live" | "dead";
  /** Bumped by every successful refresh; compare-and-set guard. */
  version: number;
  /** Single-flight refresh lease: who holds it and until when. */
  refresh_owner: string | null;
  refresh_lease_until: number | null;
  created_at: number;
  updated_at: number;
}

export interface AuditEvent {
  /** Set when read back: the event's position in the trail (ascending). */
  id?: number;
  /** `noun.verb` in the past tense: agent.registered, token.issued, token.revoked … */
  type: string;
  at: number;
  client_id?: string | null;
  agent_id?: string | null;
  provider_id?: string | null;
  user_id?: string | null;
  /** Free-form reason/metadata; never a secret. */
  data?: Record<string, unknown>;
  /** Set when read back from the chain (DESIGN §20): the record's place, its predecessor's hash, its own. */
  seq?: number;
  prev_hash?: string;
  hash?: string;
}

/** The newest record of the audit chain (seq 0 and 64 zeros when it is empty). */
export interface AuditHead {
  seq: number;
  hash: string;
}

/** A signed checkpoint of the audit chain: `signature` (base64url Ed25519) covers JCS `{seq, hash, time}`. */
export interface AuditCheckpoint {
  seq: number;
  hash: string;
  /** Epoch ms: when it was signed. */
  time: number;
  signature: string;
  /** The audit key's id (its JWK thumbprint). */
  kid: string;
}

/** A webhook subscription (DESIGN §20); the signing secret sealed. */
export interface WebhookRecord {
  webhook_id: string;
  url: string;
  events: string[];
  secret_sealed: string;
  created_at: number;
}

/** One event on its way to one endpoint (the outbox row), as a deliverer claimed it. */
export interface WebhookDelivery {
  id: number;
  webhook_id: string;
  event_id: string;
  /** The exact JSON body to POST: `{id, type, time, data}`. */
  body: string;
  created_at: number;
  attempts: number;
}

/** Which tokens an admin means (DESIGN §9): every given field must match (AND). */
export interface TokenFilter {
  token_id?: string;
  client_id?: string;
  agent_id?: string;
  user_id?: string;
  provider_id?: string;
}

export type TokenState = "active" | "revoked" | "expired";

/** A keyset page position: the last row of the previous page (newest first). */
export interface TokenPageAfter {
  created_at: number;
  token_id: string;
}

export interface AuditFilter {
  type?: string;
  client_id?: string;
  agent_id?: string;
  user_id?: string;
  provider_id?: string;
  /** `at` ≥ since, `at` < until (epoch ms). */
  since?: number;
  until?: number;
  /** Only events with an id below this one (the keyset cursor; newest first). */
  beforeId?: number;
  limit?: number;
}

/** A signed-in admin console session; the browser holds its id, the store the id's hash. */
export interface ConsoleSession {
  id_hash: string;
  created_at: number;
  expires_at: number;
}

/** One budget's count for one subject and window (DESIGN §16). */
export interface BudgetUsage {
  /** provider, where the rule is written, the rule's identity and the subject (client, or client and user). */
  bkey: string;
  window_start: number;
  used: number;
  limit: number;
  provider_id: string;
  client_id: string;
  /** Set for `per: "agent_user"` budgets. */
  user_id: string | null;
  /** The rule, as the admin reads it (`provider:0 POST /v1/messages/** 500/1h`). */
  rule: string;
  /** The window's end: the row means nothing after it. */
  expires_at: number;
}

/** `expired` is never stored: a pending or approved approval past `expires_at` reads as expired. */
export type ApprovalStatus = "pending" | "approved" | "denied" | "used";

/** One request waiting for (or given) a person's approval (DESIGN §15). */
export interface ApprovalRecord {
  approval_id: string;
  client_id: string;
  agent_id: string;
  /** The user whose grant the request would use: the one `approver: "user"` means. */
  user_id: string;
  provider_id: string;
  token_id: string;
  approver: "user" | "admin";
  method: string;
  /** The upstream path relative to api_base_url, as sent (percent-encoded). */
  path: string;
  /** The query string without `?`, as sent ("" when none). */
  query: string;
  /** base64url SHA-256 of method, literal path, query, bound headers and body (rules/request-digest.ts). */
  digest: string;
  /** The first 16 KiB of the body, sealed (the page shows it); null when the request had none. */
  body_sealed: string | null;
  /** The bound headers (JSON object, lower-case names), sealed (the page shows them); null when none. */
  headers_sealed: string | null;
  body_bytes: number;
  content_type: string | null;
  status: ApprovalStatus;
  /** `user:<id>` or `admin`, once decided. */
  decided_by: string | null;
  decided_at: number | null;
  used_at: number | null;
  created_at: number;
  expires_at: number;
}

export interface SweepResult {
  sessions: number;
  jti: number;
  tokens: number;
  /** Refresh tokens whose family ended (or was revoked) over `retainMs` ago. */
  refresh_tokens?: number;
  /** Dynamically registered MCP clients that never completed an authorization, registered over `retainMs` ago. */
  mcp_clients?: number;
  grants: number;
  /** Agents that never got an approved scope and hold no token, registered over `retainMs` ago. */
  agents: number;
  audit: number;
  rate_leases: number;
  /** Budget windows ended longer than the retention ago (DESIGN §16). */
  budget_usage: number;
  /** Webhook outbox rows delivered or given up, older than `retainMs`. */
  webhooks: number;
}

export interface Store extends McpStore, IdentityStore {
  readonly kind: "sqlite" | "postgres";

  // meta (schema version, generated admin-token hash, …)
  getMeta(key: string): Promise<string | null>;
  setMeta(key: string, value: string): Promise<void>;
  /** Sets `key` unless it is set; returns the value it holds after (the first writer's, across instances). */
  setMetaIfAbsent(key: string, value: string): Promise<string>;

  // providers
  upsertProvider(p: ProviderRecord): Promise<void>;
  getProvider(providerId: string): Promise<ProviderRecord | null>;
  listProviders(): Promise<ProviderRecord[]>;
  deleteProvider(providerId: string): Promise<boolean>;

  // agents
  /** Inserts the agent; false (and nothing written) when the agent_id is already registered. */
  createAgent(a: AgentRecord): Promise<boolean>;
  getAgentByClientId(clientId: string): Promise<AgentRecord | null>;
  getAgentByAgentId(agentId: string): Promise<AgentRecord | null>;
  /**
   * The agent, read to decide on it inside `transaction`: its row stays locked until the transaction ends
   * (PostgreSQL `SELECT … FOR UPDATE`; SQLite's `BEGIN IMMEDIATE` already holds the only write lock), so a status
   * change and a decision that depends on the status (issuing a token) happen one after the other, never interleaved.
   */
  lockAgent(clientId: string): Promise<AgentRecord | null>;
  updateAgent(clientId: string, patch: Partial<Pick<AgentRecord, "status" | "approvals" | "approval_expires" | "approval_rules" | "policy" | "budgets" | "pending_approvals">>): Promise<boolean>;
  listAgents(): Promise<AgentRecord[]>;
  /** Deletes the agent with its sessions and tokens; false when there was none. */
  deleteAgent(clientId: string): Promise<boolean>;

  // attestation replay cache
  /** Records (agentId, jti) until `expiresAt`; false when that pair was already recorded and is unexpired. */
  recordJti(agentId: string, jti: string, expiresAt: number, now: number): Promise<boolean>;

  // authorization sessions
  createSession(s: SessionRecord): Promise<void>;
  getSession(sessionId: string): Promise<SessionRecord | null>;
  getSessionByHandle(handle: string): Promise<SessionRecord | null>;
  getSessionByUpstreamState(state: string): Promise<SessionRecord | null>;
  /** Binds a pending session to a browser; true when now bound to `bindingHash` (first binder wins). */
  bindSession(sessionId: string, bindingHash: string): Promise<boolean>;
  /** pending → consented, atomically; false if it was not pending. */
  markSessionConsented(
    sessionId: string,
    c: { code_hash: string; user_id: string; consented_scopes: string[]; grant_id: string; expires_at: number },
  ): Promise<boolean>;
  /** pending → denied, atomically; false if it was not pending. */
  markSessionDenied(sessionId: string): Promise<boolean>;
  /**
   * consented → used, atomically, only for this client and before expiry; returns the session as it was,
   * or null when another request consumed it first (or it is not consumable).
   */
  consumeSession(sessionId: string, clientId: string, now: number): Promise<SessionRecord | null>;

  // ATH tokens
  createToken(t: TokenRecord): Promise<void>;
  getToken(tokenHash: string): Promise<TokenRecord | null>;
  /** Sets revoked_at if unset; returns the token as revoked, or null if no such token. */
  revokeToken(tokenHash: string, now: number): Promise<TokenRecord | null>;
  /** Revokes every live token of a client (and provider, if given); returns how many. */
  revokeTokensOfClient(clientId: string, now: number, providerId?: string): Promise<number>;
  /**
   * Tokens matching `filter` (and `state` at `now`), newest first — (created_at, token_id) descending — after `after`,
   * at most `limit`.
   */
  listTokens(filter: TokenFilter, o: { state?: TokenState; now: number; after?: TokenPageAfter; limit: number }): Promise<TokenRecord[]>;
  /**
   * Revokes every live token matching `filter` (at least one field), and the refresh families of the tokens matched
   * (with their other access tokens); returns the access tokens revoked.
   */
  revokeTokensWhere(filter: TokenFilter, now: number): Promise<TokenRecord[]>;

  // refresh tokens (DESIGN §17), of agents and MCP clients alike (§18)
  createRefreshToken(r: RefreshTokenRecord): Promise<void>;
  getRefreshToken(refreshHash: string): Promise<RefreshTokenRecord | null>;
  /**
   * Spends an unspent, unrevoked refresh token, atomically (`UPDATE … WHERE spent_at IS NULL … RETURNING`): exactly one
   * of concurrent presentations gets the record back, across instances; the others get null.
   */
  spendRefreshToken(refreshHash: string, now: number): Promise<RefreshTokenRecord | null>;
  /** Revokes every refresh token of the family and every live access token in it; returns those access tokens. */
  revokeRefreshFamily(familyId: string, now: number): Promise<TokenRecord[]>;
  /**
   * DESIGN §22: who holds a live MCP refresh family for one of `resources` (the federated URLs) — each (client, person,
   * resource) once, at most 1,000.
   */
  listResourceHolders(resources: readonly string[], now: number): Promise<{ client_id: string; agent_id: string; user_id: string; resource: string }[]>;

  /** How many tokens are active, revoked and expired at `now` (the admin console's overview). */
  countTokens(now: number): Promise<{ active: number; revoked: number; expired: number }>;

  // admin console sessions
  /** Saves a new session, dropping the ones that expired by its creation. */
  createConsoleSession(s: ConsoleSession): Promise<void>;
  /** The session if it exists and is unexpired at `now`. */
  getConsoleSession(idHash: string, now: number): Promise<ConsoleSession | null>;
  deleteConsoleSession(idHash: string): Promise<void>;

  // upstream grants
  createGrant(g: GrantRecord): Promise<void>;
  getGrant(grantId: string): Promise<GrantRecord | null>;
  /**
   * Takes the single-flight refresh lease if the grant is live, at `version`, and the lease is free or lapsed.
   * Returns true to exactly one caller at a time, across processes.
   */
  claimGrantRefresh(grantId: string, version: number, owner: string, now: number, leaseMs: number): Promise<boolean>;
  /** Stores refreshed tokens if `owner` still holds the lease; bumps version, frees the lease. */
  completeGrantRefresh(
    grantId: string,
    owner: string,
    update: { access_token_sealed: string; refresh_token_sealed: string | null; expires_at: number | null; scope: string[] },
    now: number,
  ): Promise<boolean>;
  /** Frees the lease; with `dead: true` marks the grant dead (refresh refused by the provider). */
  releaseGrantRefresh(grantId: string, owner: string, dead: boolean, now: number): Promise<void>;
  deleteGrant(grantId: string): Promise<GrantRecord | null>;

  // audit
  /**
   * Appends events in the order given, in one transaction that extends the hash chain (DESIGN §20): the chain's head
   * row is locked, each event gets the next `seq`, the head's hash as `prev_hash`, and its own hash — so two instances
   * writing at once never fork the chain.
   */
  appendAudit(...events: AuditEvent[]): Promise<void>;
  /**
   * appendAudit, once per `batchId` (the audit queue's id for the batch): false, and nothing written, when that batch
   * is in the store already — a retry after a COMMIT whose answer was lost (DESIGN §24).
   */
  appendAuditBatch(batchId: string, events: AuditEvent[]): Promise<boolean>;
  /** Chains, in id order, records written before the chain existed (none after the first start); returns how many. */
  chainAuditBacklog(): Promise<number>;
  /** The chain's newest record's seq and hash. */
  auditHead(): Promise<AuditHead>;
  /** Chained records with seq > `afterSeq` (and ≤ `throughSeq`), ascending, at most `limit`. */
  listAuditChain(o: { afterSeq: number; throughSeq?: number; limit: number }): Promise<AuditEvent[]>;
  /** Saves a checkpoint; false when one at that seq already exists (another instance signed it). */
  addAuditCheckpoint(c: AuditCheckpoint): Promise<boolean>;
  /** Checkpoints with afterSeq < seq ≤ throughSeq, ascending. */
  listAuditCheckpoints(o: { afterSeq: number; throughSeq: number }): Promise<AuditCheckpoint[]>;
  /** The checkpoint with the greatest seq, among those signed before `beforeTime` and at or below `maxSeq`. */
  lastAuditCheckpoint(o: { beforeTime?: number; maxSeq?: number }): Promise<AuditCheckpoint | null>;
  /** The lowest seq still stored (null when the chain holds no record). */
  firstAuditSeq(): Promise<number | null>;
  /**
   * Where a sweep of records at or before `cutoff` would end: the last record of the longest run from the chain's
   * start whose records are all that old (null when there is none). The sweeper anchors a checkpoint there first.
   */
  auditSweepPoint(cutoff: number): Promise<AuditHead | null>;
  /** Events matching the filter, newest first, with their ids. */
  listAudit(opts?: AuditFilter): Promise<AuditEvent[]>;

  // webhooks (DESIGN §20)
  createWebhook(w: WebhookRecord): Promise<void>;
  listWebhooks(): Promise<WebhookRecord[]>;
  getWebhook(webhookId: string): Promise<WebhookRecord | null>;
  /** Deletes the subscription and its undelivered events; false when there was none. */
  deleteWebhook(webhookId: string): Promise<boolean>;
  /** Puts the event in the outbox of every webhook subscribed to `type`; returns for how many. */
  enqueueWebhookEvent(e: { event_id: string; type: string; body: string; created_at: number }): Promise<number>;
  /**
   * Leases, to `owner` until `now + leaseMs`, the oldest pending event of each endpoint when it is due and not leased
   * by anyone else — only the oldest, so each endpoint gets its events in order; across instances, each once at a time.
   */
  claimWebhookDeliveries(owner: string, now: number, leaseMs: number): Promise<WebhookDelivery[]>;
  /** Ends `owner`'s lease: delivered, failed for good, or pending again from `next_at`; false if the lease was lost. */
  finishWebhookDelivery(id: number, owner: string, o: { state: "delivered" | "failed" | "pending"; attempts: number; next_at: number }): Promise<boolean>;
  /** How many events wait per state (tests and the console). */
  countWebhookOutbox(): Promise<{ pending: number; delivered: number; failed: number }>;

  // rate limits (DESIGN §10)
  /**
   * Adds up to `want` to what was handed out for `key` in the window starting at `windowStart`, never past `limit`;
   * returns how much was added (0: the limit is spent). One atomic statement: instances sharing the database never
   * hand out more than `limit` together. The row may be swept after `expiresAt`.
   */
  leaseRateCapacity(key: string, windowStart: number, want: number, limit: number, expiresAt: number): Promise<number>;

  /**
   * Deletes expired sessions, jti entries, tokens expired/revoked over `retainMs` ago, refresh families ended or revoked
   * over `retainMs` ago, dead/orphan grants, agents registered over `retainMs` ago that never got an approved scope and
   * hold no token (not those pending an admin's decision), dynamically registered MCP clients that never completed an
   * authorization within `retainMs` (with the agent record they act as, when it holds no token), and (when
   * `auditRetainMs` is given) audit records older than that — only up to the newest checkpoint at or below
   * auditSweepPoint(now - auditRetainMs), so what remains starts right after a signed anchor (DESIGN §20), and the
   * checkpoints below that anchor; webhook outbox rows delivered or given up over `retainMs` ago.
   */
  sweep(now: number, retainMs: number, auditRetainMs?: number): Promise<SweepResult>;

  // budgets (DESIGN §16)
  /**
   * Counts one call against a budget in one conditional statement: the new count, or null when the window's count
   * had reached `limit` already (nothing changed). `force` counts past the limit (a call a person approved).
   */
  countBudget(u: Omit<BudgetUsage, "used">, force?: boolean, callId?: string): Promise<number | null>;
  /** Gives one count back (a counted call that was not sent after all). */
  uncountBudget(u: Pick<BudgetUsage, "bkey" | "window_start">): Promise<void>;
  /**
   * Gives back the count `countBudget` took for call `callId` against `u`, once: true when it did, false when there
   * was none (never counted — its count failed before it committed — or already given back, by any instance).
   */
  uncountCall(callId: string, u: Pick<BudgetUsage, "bkey" | "window_start">): Promise<boolean>;
  /** Usage rows whose window has not ended at `now`. */
  listBudgetUsage(o: { now: number; client_id?: string; provider_id?: string }): Promise<BudgetUsage[]>;

  // per-request approvals (DESIGN §15)
  /** Saves a new approval, dropping ones that expired over a day before it. */
  createApproval(a: ApprovalRecord): Promise<void>;
  getApproval(approvalId: string): Promise<ApprovalRecord | null>;
  /** How many of the client's approvals are pending and unexpired at `now` (the gateway caps them per client). */
  countPendingApprovals(clientId: string, now: number): Promise<number>;
  /**
   * Approvals newest first ((created_at, approval_id) descending) after `after`; `status` "expired" means pending or
   * approved past expiry at `now`, "pending"/"approved" only unexpired ones.
   */
  listApprovals(o: { status?: ApprovalStatus | "expired"; now: number; after?: { created_at: number; approval_id: string }; limit: number }): Promise<ApprovalRecord[]>;
  /**
   * The approval an MCP resend spends (DESIGN §18: same client, user, provider and digest, any session or JSON-RPC
   * id): an unexpired approved one first, else the newest unexpired pending or denied one; null when none.
   */
  findMcpApproval(m: { client_id: string; user_id: string; provider_id: string; digest: string }, now: number): Promise<ApprovalRecord | null>;
  /** pending → approved|denied, atomically, before expiry; the approval as decided, or null when it was not pending. */
  decideApproval(approvalId: string, decision: "approved" | "denied", by: string, now: number): Promise<ApprovalRecord | null>;
  /**
   * approved → used, atomically, only for the same client, user, provider and digest, before expiry: exactly one of
   * racing resends gets the approval back; the others get null.
   */
  consumeApproval(approvalId: string, match: { client_id: string; user_id: string; provider_id: string; digest: string }, now: number): Promise<ApprovalRecord | null>;

  /**
   * Runs one decision that spans several statements atomically: `fn` gets a Store bound to the transaction; it
   * commits when `fn` resolves and rolls back when it throws. Other work on this store waits meanwhile on SQLite (one
   * connection, `BEGIN IMMEDIATE`); on PostgreSQL it runs on its own connection, and rows that must not change under
   * the decision are read with `… FOR UPDATE`. Calling it on the Store it gave joins the running transaction.
   */
  transaction<T>(fn: (tx: Store) => Promise<T>): Promise<T>;

  /** Other processes' changes to this data, for caches (store/notify.ts, store/cached.ts). */
  changes(): ChangeFeed;
  close(): Promise<void>;
}
