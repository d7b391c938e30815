/**
 * The Store, written once in the SQL both SQLite (≥ 3.35) and PostgreSQL speak, one module per aggregate in sql/:
 * every "only once" rule is a single statement — a unique key, `INSERT … ON CONFLICT`, or `UPDATE … WHERE <state> …
 * RETURNING` — so it holds across connections and across `ath serve` instances; a decision that spans statements runs
 * in `transaction`. Drivers (sqlite.ts, postgres.ts) only run it.
 */
import { storeFailure } from "./errors.ts";
import { agentQueries } from "./sql/agents.ts";
import { approvalQueries } from "./sql/approvals.ts";
import { budgetQueries } from "./sql/budgets.ts";
import { auditQueries } from "./sql/audit.ts";
import { consoleQueries } from "./sql/console.ts";
import { delegationQueries } from "./sql/delegations.ts";
import type { Driver } from "./sql/driver.ts";
import { grantQueries } from "./sql/grants.ts";
import { identityQueries } from "./sql/identity.ts";
import { mcpQueries } from "./sql/mcp.ts";
import { metaQueries } from "./sql/meta.ts";
import { providerQueries } from "./sql/providers.ts";
import { refreshQueries } from "./sql/refresh.ts";
import { rateLimitQueries } from "./sql/rate-limits.ts";
import { sessionQueries } from "./sql/sessions.ts";
import { sweepQueries } from "./sql/sweep.ts";
import { tokenQueries } from "./sql/tokens.ts";
import { webhookQueries } from "./sql/webhooks.ts";
import type { Store } from "./types.ts";

export type { Driver } from "./sql/driver.ts";

export function sqlStore(driver: Driver, inTransaction = false): Store {
  const db = inTransaction ? driver : guarded(driver);
  return {
    kind: db.kind,
    ...metaQueries(db),
    ...providerQueries(db),
    ...agentQueries(db),
    ...sessionQueries(db),
    ...tokenQueries(db),
    ...refreshQueries(db),
    ...grantQueries(db),
    ...auditQueries(db),
    ...consoleQueries(db),
    ...approvalQueries(db),
    ...budgetQueries(db),
    ...mcpQueries(db),
    ...rateLimitQueries(db),
    ...sweepQueries(db),
    ...webhookQueries(db),
    ...identityQueries(db),
    ...delegationQueries(db),
    // Nested: already in one, the inner decision joins it.
    transaction: (fn) => (inTransaction ? fn(sqlStore(db, true)) : db.transaction((tx) => fn(sqlStore(tx, true)))),
    changes: () => db.changes(),
    close: () => db.close(),
  };
}

/**
 * The driver with every failure of the database turned into StoreUnavailableError — statements, BEGIN/COMMIT, the
 * change feed's NOTIFY — while an error the decision itself throws inside a transaction passes through unchanged.
 */
function guarded(db: Driver): Driver {
  const g: Driver = {
    kind: db.kind,
    all: (sql, params) => db.all(sql, params).catch((err) => Promise.reject(storeFailure(err))),
    run: (sql, params) => db.run(sql, params).catch((err) => Promise.reject(storeFailure(err))),
    async transaction(fn) {
      let own: { err: unknown } | undefined;
      try {
        return await db.transaction(async (tx) => {
          try {
            return await fn(guarded(tx));
          } catch (err) {
            own = { err };
            throw err;
          }
        });
      } catch (err) {
        throw own !== undefined && own.err === err ? err : storeFailure(err);
      }
    },
    changes() {
      const feed = db.changes();
      return {
        publish: (keys) => feed.publish(keys).catch((err) => Promise.reject(storeFailure(err))),
        subscribe: (onChange, onTrust) => feed.subscribe(onChange, onTrust),
      };
    },
    close: () => db.close(),
  };
  return g;
}
