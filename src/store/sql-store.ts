/**
 * The Store, written once in the SQL both SQLite (≥ 3.35) and PostgreSQL speak, one module per aggregate in sql/:
 * every "only once" rule is a single statement — a unique key, `INSERT … ON CONFLICT`, or `UPDATE … WHERE <state> …
 * RETURNING` — so it holds across connections and across `ath serve` instances; a decision that spans statements runs
 * in `transaction`. Drivers (sqlite.ts, postgres.ts) only run it.
 */
import { agentQueries } from "./sql/agents.ts";
import { approvalQueries } from "./sql/approvals.ts";
import { auditQueries } from "./sql/audit.ts";
import { consoleQueries } from "./sql/console.ts";
import type { Driver } from "./sql/driver.ts";
import { grantQueries } from "./sql/grants.ts";
import { metaQueries } from "./sql/meta.ts";
import { providerQueries } from "./sql/providers.ts";
import { rateLimitQueries } from "./sql/rate-limits.ts";
import { sessionQueries } from "./sql/sessions.ts";
import { sweepQueries } from "./sql/sweep.ts";
import { tokenQueries } from "./sql/tokens.ts";
import type { Store } from "./types.ts";

export type { Driver } from "./sql/driver.ts";

export function sqlStore(db: Driver, inTransaction = false): Store {
  return {
    kind: db.kind,
    ...metaQueries(db),
    ...providerQueries(db),
    ...agentQueries(db),
    ...sessionQueries(db),
    ...tokenQueries(db),
    ...grantQueries(db),
    ...auditQueries(db),
    ...consoleQueries(db),
    ...approvalQueries(db),
    ...rateLimitQueries(db),
    ...sweepQueries(db),
    // Nested: already in one, the inner decision joins it.
    transaction: (fn) => (inTransaction ? fn(sqlStore(db, true)) : db.transaction((tx) => fn(sqlStore(tx, true)))),
    changes: () => db.changes(),
    close: () => db.close(),
  };
}
