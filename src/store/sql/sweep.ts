/**
 * The sweep: rows past their life, deleted in indexed batches of at most SWEEP_BATCH rows a statement, yielding to
 * the event loop between batches — so it never stalls the gateway (DESIGN §14: no stall over 20 ms, at a million
 * tokens too). A batch is chosen by primary key through an index on the column that ages it, and its size adapts so
 * one statement stays near BATCH_MS: on SQLite a DELETE runs on the event loop, and a row of a table with five
 * indexes costs tens of microseconds to delete.
 */
import type { Store } from "../types.ts";
import type { Driver } from "./driver.ts";

/** The predicate of the partial index agents_unscoped (migration 4), word for word, so both databases use it. */
export const UNSCOPED_AGENT = `status <> 'pending' AND approvals NOT LIKE '%"approved_scopes":["%'`;

/** Rows per DELETE statement, at most. */
export const SWEEP_BATCH = 1_000;
/** What one statement should take: well under the 20 ms stall budget. */
const BATCH_MS = 8;

export function sweepQueries(db: Driver): Pick<Store, "sweep"> {
  let batch = 100;
  /** Deletes the rows `select` names (a batch at a time, by key) until none are left; returns how many. */
  async function inBatches(table: string, key: string, select: string, params: unknown[]): Promise<number> {
    let total = 0;
    for (;;) {
      const size = batch;
      const started = performance.now();
      const n = await db.run(`DELETE FROM ${table} WHERE ${key} IN (${select} LIMIT ${size})`, params);
      const took = performance.now() - started;
      total += n;
      if (n < size) return total;
      // Aim at BATCH_MS a statement: halve after a slow one, grow after a fast one (a few fixed sizes, so the
      // statement cache stays small).
      batch = took > BATCH_MS ? Math.max(25, batch >> 1) : took < BATCH_MS / 2 ? Math.min(SWEEP_BATCH, batch << 1) : batch;
      await new Promise((resolve) => setImmediate(resolve)); // let requests run between batches
    }
  }

  /**
   * Audit records up to the newest checkpoint at or below the sweep point, and the checkpoints below it: what remains
   * starts right after a signed anchor, so it still verifies (DESIGN §20). Pre-chain rows (no seq) wait to be chained.
   */
  async function sweepAudit(cutoff: number): Promise<number> {
    const [point] = await db.all("SELECT MIN(seq) AS s FROM audit WHERE seq IS NOT NULL AND at > ?", [cutoff]);
    const [head] = await db.all("SELECT seq FROM audit_head WHERE id = 1");
    const end = point?.s == null ? Number(head?.seq ?? 0) : Number(point.s) - 1;
    const [anchor] = await db.all("SELECT MAX(seq) AS s FROM audit_checkpoints WHERE seq <= ?", [end]);
    if (anchor?.s == null) return 0;
    const through = Number(anchor.s);
    const n = await inBatches("audit", "id", "SELECT id FROM audit WHERE seq <= ?", [through]);
    await db.run("DELETE FROM audit_checkpoints WHERE seq < ?", [through]);
    return n;
  }

  return {
    async sweep(now, retainMs, auditRetainMs) {
      const cutoff = now - retainMs;
      const sessions = await inBatches("sessions", "session_id", "SELECT session_id FROM sessions WHERE expires_at <= ?", [now]);
      const jti = await inBatches("jti", "(agent_id, jti)", "SELECT agent_id, jti FROM jti WHERE expires_at <= ?", [now]);
      const tokens =
        (await inBatches("tokens", "token_hash", "SELECT token_hash FROM tokens WHERE expires_at <= ?", [cutoff])) +
        (await inBatches("tokens", "token_hash", "SELECT token_hash FROM tokens WHERE revoked_at <= ?", [cutoff]));
      // A refresh family — an agent's or an MCP client's — is kept whole while it lives (a spent member presented again
      // is reuse), then `retainMs`.
      const refresh =
        (await inBatches("refresh_tokens", "refresh_hash", "SELECT refresh_hash FROM refresh_tokens WHERE family_expires_at <= ?", [cutoff])) +
        (await inBatches("refresh_tokens", "refresh_hash", "SELECT refresh_hash FROM refresh_tokens WHERE revoked_at <= ?", [cutoff]));
      // Kept for `retainMs` so the proxy can still say *why* (upstream_grant_revoked), and so a grant created
      // a moment before its session is marked consented is not taken for an orphan. A grant no token names is kept
      // while the MCP client holds a live family for that person: a federated URL's members (DESIGN §22) are reached
      // through the person's grants, not through the front-door token's one.
      const grants =
        (await inBatches("grants", "grant_id", "SELECT grant_id FROM grants WHERE status = 'dead' AND updated_at <= ?", [cutoff])) +
        (await inBatches(
          "grants",
          "grant_id",
          `SELECT grant_id FROM grants WHERE created_at <= ?
             AND NOT EXISTS (SELECT 1 FROM tokens t WHERE t.grant_id = grants.grant_id)
             AND NOT EXISTS (SELECT 1 FROM refresh_tokens r WHERE r.grant_id = grants.grant_id AND r.revoked_at IS NULL AND r.family_expires_at > ?)
             AND NOT EXISTS (SELECT 1 FROM sessions s WHERE s.grant_id = grants.grant_id)
             AND NOT EXISTS (SELECT 1 FROM refresh_tokens f WHERE f.agent_id = grants.agent_id AND f.user_id = grants.user_id
                               AND f.oauth_client_id IS NOT NULL AND f.revoked_at IS NULL AND f.family_expires_at > ?)`,
          [cutoff, now, now],
        ));
      // Registration is open to anyone: an agent that was never given a scope and holds no token is only weight.
      // (The store writes `approvals` with JSON.stringify, so an approved scope always reads `"approved_scopes":["`.)
      // Dynamic registration (/oauth/register) is open to anyone too, rate-limited per IP: a client that never completed
      // an authorization within the retention goes, with the agent record it acts as when that holds no token (its
      // sessions cascade). The partial index mcp_clients_unused (migration 13) holds only such clients.
      const unusedClients = "SELECT client_id FROM mcp_clients WHERE authorized_at IS NULL AND created_at <= ?";
      const agents =
        (await inBatches(
          "agents",
          "client_id",
          `SELECT client_id FROM agents WHERE ${UNSCOPED_AGENT} AND created_at <= ?
             AND NOT EXISTS (SELECT 1 FROM tokens t WHERE t.client_id = agents.client_id)`,
          [cutoff],
        )) +
        (await inBatches(
          "agents",
          "client_id",
          `SELECT client_id FROM agents WHERE client_id IN (${unusedClients})
             AND NOT EXISTS (SELECT 1 FROM tokens t WHERE t.client_id = agents.client_id)`,
          [cutoff],
        ));
      const mcpClients = await inBatches("mcp_clients", "client_id", unusedClients, [cutoff]);
      const audit = auditRetainMs === undefined ? 0 : await sweepAudit(now - auditRetainMs);
      const rateLeases = await inBatches("rate_leases", "(rkey, window_start)", "SELECT rkey, window_start FROM rate_leases WHERE expires_at <= ?", [now]);
      // budget windows that ended more than `retainMs` ago (kept that long for `ath admin budgets`)
      const budgetUsage = await inBatches("budget_usage", "(bkey, window_start)", "SELECT bkey, window_start FROM budget_usage WHERE expires_at <= ?", [cutoff]);
      const webhooks = await inBatches("webhook_outbox", "id", "SELECT id FROM webhook_outbox WHERE created_at <= ? AND state <> 'pending'", [cutoff]);
      return {
        sessions, jti, tokens, refresh_tokens: refresh, grants, agents, mcp_clients: mcpClients, audit, rate_leases: rateLeases, budget_usage: budgetUsage, webhooks,
      };
    },
  };
}
