/**
 * Change feeds: how a process learns that *another* process changed data it may have cached (DESIGN §13). The cached
 * store (cached.ts) invalidates its own writes itself; the feed carries everyone else's.
 *
 * - PostgreSQL: LISTEN/NOTIFY on a channel per schema. Keys go out with `pg_notify` once the write committed; a
 *   dedicated connection listens (Bun.SQL's `listen`). While it is down, notifications are lost, so the feed reports
 *   "untrusted" from its `onclose` until `onlisten` fires again — the cache bypasses itself meanwhile and is flushed
 *   when trust returns.
 * - SQLite: `PRAGMA data_version` changes when another connection committed; polled every 50 ms, a change means
 *   "anything may have changed" (one process per file is the normal case, and then it never fires).
 */

/** A key names cached data: `t:<token hash>`, `c:<client_id>` (its agent and tokens), `g:<grant_id>`, `p:<provider_id>`, or `*` (everything). */
export type ChangeKey = string;

export interface ChangeFeed {
  /** Announces keys this process changed, after they committed, to the other processes on the same data. */
  publish(keys: readonly ChangeKey[]): Promise<void>;
  /**
   * Delivers other processes' changes to `onChange`; `onTrust(false)` when changes may be missed (do not use the
   * cache), `onTrust(true)` once every change will be delivered again (flush first). Resolves with `stop`.
   */
  subscribe(onChange: (key: ChangeKey) => void, onTrust: (trusted: boolean) => void): Promise<() => Promise<void>>;
}

/** NOTIFY payloads must stay under 8000 bytes: keys are sent in chunks of about this size. */
export const NOTIFY_CHUNK_BYTES = 7000;

/** Splits keys into space-separated payloads, each prefixed with the sender's id, under the NOTIFY size limit. */
export function payloads(sender: string, keys: readonly ChangeKey[]): string[] {
  const out: string[] = [];
  let current = sender;
  for (const key of keys) {
    if (current.length + key.length + 1 > NOTIFY_CHUNK_BYTES && current !== sender) {
      out.push(current);
      current = sender;
    }
    current += ` ${key}`;
  }
  if (current !== sender) out.push(current);
  return out;
}
