/** What a dialect gives the shared SQL: `?` placeholders, rows back (also for `… RETURNING`), changed-row counts, transactions. */
import type { Row } from "../rows.ts";
import type { ChangeFeed } from "../notify.ts";
import type { Store } from "../types.ts";

export interface Driver {
  readonly kind: Store["kind"];
  all(sql: string, params?: unknown[]): Promise<Row[]>;
  run(sql: string, params?: unknown[]): Promise<number>;
  /**
   * Runs `fn` in one transaction on a driver bound to it: committed when `fn` resolves, rolled back when it throws.
   * The write lock is taken at the start (SQLite `BEGIN IMMEDIATE`; PostgreSQL callers lock rows with FOR UPDATE).
   */
  transaction<T>(fn: (tx: Driver) => Promise<T>): Promise<T>;
  /** Other processes' changes (store/notify.ts). */
  changes(): ChangeFeed;
  close(): Promise<void>;
}

/** The first row mapped, or null. */
export async function one<T>(db: Driver, sql: string, params: unknown[], map: (r: Row) => T): Promise<T | null> {
  const [row] = await db.all(sql, params);
  return row ? map(row) : null;
}

export function insert(table: string, columns: readonly string[], suffix = ""): string {
  return `INSERT INTO ${table} (${columns.join(", ")}) VALUES (${columns.map(() => "?").join(", ")}) ${suffix}`;
}
