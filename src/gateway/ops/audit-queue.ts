/**
 * Audit events leave the request path (DESIGN §13): queued in memory, written in batches — one statement per batch,
 * at most `delayMs` after the first event of a batch or as soon as `maxBatch` are waiting — and flushed when the
 * gateway closes (SIGTERM). A kill -9 loses at most the events of the last `delayMs`; never a token, revocation or
 * grant, which are written by the requests themselves.
 */
import type { AuditEvent, Store } from "../../store/types.ts";
import type { Logger } from "../context.ts";

export interface AuditQueue {
  push(event: AuditEvent): void;
  /** Writes everything queued so far; resolves once it is in the store (or failed and was logged). */
  flush(): Promise<void>;
}

export function auditQueue(
  store: Store,
  log: Logger,
  o: {
    maxBatch?: number;
    delayMs?: number;
    /** How a batch is written (default `store.appendAudit`): the gateway also fills the webhook outbox in it. */
    write?: (batch: AuditEvent[]) => Promise<void>;
    onWritten?: (batch: AuditEvent[]) => void;
  } = {},
): AuditQueue {
  const maxBatch = o.maxBatch ?? 200;
  const delayMs = o.delayMs ?? 50;
  let queued: AuditEvent[] = [];
  let timer: ReturnType<typeof setTimeout> | undefined;
  /** Batches are written one after another, in order. */
  let writing: Promise<void> = Promise.resolve();

  function flush(): Promise<void> {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
    const batch = queued;
    queued = [];
    if (batch.length > 0) {
      writing = writing.then(() =>
        (o.write ? o.write(batch) : store.appendAudit(...batch)).then(
          () => o.onWritten?.(batch),
          (err) => log.error(`audit write failed for ${batch.length} event(s)`, err),
        ),
      );
    }
    return writing;
  }

  return {
    push(event) {
      queued.push(event);
      if (queued.length >= maxBatch) void flush();
      else if (timer === undefined) {
        timer = setTimeout(() => void flush(), delayMs);
        timer.unref();
      }
    },
    flush,
  };
}
