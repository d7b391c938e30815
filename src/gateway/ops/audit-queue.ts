/**
 * Audit events leave the request path (DESIGN §13): queued in memory, written in batches — one statement per batch,
 * at most `delayMs` after the first event of a batch or as soon as `maxBatch` are waiting — and flushed when the
 * gateway closes (SIGTERM). While a stream of proxied calls fills the batches (the last one held ≥ BUSY_ITEMS events and
 * grouped calls), a batch waits `busyDelayMs` instead: a write costs the store a transaction — the lock, a WAL frame per
 * page each of the audit table's indexes changed, and their share of the next checkpoint — whatever it carries, and at
 * 50 ms those twenty transactions a second cost a proxied call ≈ 8 % of its throughput (scripts/bench/audit-wrk.ts; a
 * build that grouped the calls but never wrote them was as fast as one without the audit). A kill -9 loses at most the
 * events of the last `busyDelayMs`; never a token, revocation or grant, which are written by the requests themselves.
 */
import type { AuditEvent, Store } from "../../store/types.ts";
import type { Logger, AuditQueue } from "../context.ts";

/** Items one grouped event holds at most (AuditQueue.group). */
export const MAX_GROUP = 500;
/** A batch of at least this many events and grouped items makes the next one wait `busyDelayMs` (2,000 a second at 50 ms). */
export const BUSY_ITEMS = 100;


export function auditQueue(
  store: Store,
  log: Logger,
  o: {
    maxBatch?: number;
    delayMs?: number;
    /** The delay after a busy batch (default 250 ms; never shorter than `delayMs`). */
    busyDelayMs?: number;
    /** How a batch is written (default `store.appendAudit`): the gateway also fills the webhook outbox in it. */
    write?: (batch: AuditEvent[]) => Promise<void>;
    onWritten?: (batch: AuditEvent[]) => void;
  } = {},
): AuditQueue {
  const maxBatch = o.maxBatch ?? 200;
  const delayMs = o.delayMs ?? 50;
  const busyDelayMs = Math.max(delayMs, o.busyDelayMs ?? 250);
  let queued: AuditEvent[] = [];
  /** Events and grouped items in this batch, and in the last one written. */
  let items = 0;
  let lastItems = 0;
  /** This batch's grouped events by key, and how many items each holds: a written batch is never added to. */
  const groups = new Map<unknown, { event: AuditEvent; items: number }>();
  let timer: ReturnType<typeof setTimeout> | undefined;
  /** Batches are written one after another, in order. */
  let writing: Promise<void> = Promise.resolve();

  function flush(): Promise<void> {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
    const batch = queued;
    queued = [];
    groups.clear();
    lastItems = items;
    items = 0;
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

  function push(event: AuditEvent): void {
    queued.push(event);
    items++;
    if (queued.length >= maxBatch) void flush();
    else if (timer === undefined) {
      timer = setTimeout(() => void flush(), lastItems >= BUSY_ITEMS ? busyDelayMs : delayMs);
      timer.unref();
    }
  }

  return {
    push,
    group(key, item, open, add) {
      const current = groups.get(key);
      if (current !== undefined && current.items < MAX_GROUP) {
        add(current.event, item);
        current.items++;
        items++;
        return;
      }
      const event = open(item);
      add(event, item);
      groups.set(key, { event, items: 1 });
      push(event); // may write the batch at once (maxBatch), which ends this group too
    },
    flush,
  };
}
