/**
 * Audit events leave the request path (DESIGN §13): queued in memory, written in batches — one statement per batch,
 * at most `delayMs` after the first event of a batch or as soon as `maxBatch` are waiting — and flushed when the
 * gateway closes (SIGTERM). While a stream of proxied calls fills the batches (the last one held ≥ BUSY_ITEMS events and
 * grouped calls), a batch waits `busyDelayMs` instead: a write costs the store a transaction — the lock, a WAL frame per
 * page each of the audit table's indexes changed, and their share of the next checkpoint — whatever it carries, and at
 * 50 ms those twenty transactions a second cost a proxied call ≈ 8 % of its throughput (scripts/bench/audit-wrk.ts; a
 * build that grouped the calls but never wrote them was as fast as one without the audit). A kill -9 loses at most the
 * events of the last `busyDelayMs`; never a token, revocation or grant, which are written by the requests themselves.
 *
 * A batch the store does not take (PostgreSQL refused, reset, stalled: DESIGN §24) is kept and written again, in
 * order, until the store takes it — the batches after it wait behind it, so the chain stays in the order the events
 * happened, contiguous across the gap (seq and prev_hash are given when a batch commits), and once: every attempt
 * carries the batch's id, so one whose COMMIT went through but whose answer was lost is not written twice (the store
 * keeps the ids, `audit_batches`). Nothing is dropped: past
 * `maxPending` events waiting, `overloaded()` turns /ready to 503 so a load balancer sends traffic elsewhere, and the
 * log says so; the pending count is the metric `ath_audit_pending_events`. On SIGTERM the gateway waits for the
 * backlog at most `closeTimeoutMs`, then names what it could not write.
 */
import { storeFailure } from "../../store/errors.ts";
import type { AuditEvent, Store } from "../../store/types.ts";
import type { Logger, AuditQueue } from "../context.ts";

/** Items one grouped event holds at most (AuditQueue.group). */
export const MAX_GROUP = 500;
/** A batch of at least this many events and grouped items makes the next one wait `busyDelayMs` (2,000 a second at 50 ms). */
export const BUSY_ITEMS = 100;
/** Events waiting for the store beyond which the gateway says it is not ready (default of `maxPending`). */
export const MAX_PENDING = 100_000;
/** Retries of a batch the store did not take: first after this many ms, doubling up to RETRY_MAX_MS. */
const RETRY_MIN_MS = 50;
const RETRY_MAX_MS = 1_000;


export function auditQueue(
  store: Store,
  log: Logger,
  o: {
    maxBatch?: number;
    delayMs?: number;
    /** The delay after a busy batch (default 250 ms; never shorter than `delayMs`). */
    busyDelayMs?: number;
    /**
     * How a batch is written (default `store.appendAuditBatch`): the gateway also fills the webhook outbox in it. Each
     * attempt of one batch carries its id, so the store writes it once however often it is retried.
     */
    write?: (batch: AuditEvent[], batchId: string) => Promise<unknown>;
    onWritten?: (batch: AuditEvent[]) => void;
    /** Events waiting beyond which `overloaded()` is true (default MAX_PENDING). */
    maxPending?: number;
    /** Told the number of events waiting whenever it changes after a failure (the metric). */
    onPending?: (events: number) => void;
    /** Told of each failed attempt (the metric). */
    onRetry?: () => void;
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
  const maxPending = o.maxPending ?? MAX_PENDING;
  /** Events handed to `writing` and not yet in the store. */
  let pending = 0;
  /** Since when the store has not taken a batch (null: it takes them). */
  let failingSince: number | null = null;
  let closing = false;
  /** flush() callers waiting while a batch fails: told at once (an export answers 503 rather than wait for the store). */
  const waiters = new Set<(err: unknown) => void>();

  /** Writes `batch`, again and again until the store takes it (or the gateway is closing and gave up). */
  async function write(batch: AuditEvent[]): Promise<void> {
    const id = crypto.randomUUID();
    for (let wait = RETRY_MIN_MS; ; wait = Math.min(wait * 2, RETRY_MAX_MS)) {
      try {
        await (o.write ? o.write(batch, id) : store.appendAuditBatch(id, batch));
        pending -= batch.length;
        if (failingSince !== null) {
          log.info(`audit writes resumed: the store took the batches kept for ${Date.now() - failingSince} ms`, { pending });
          failingSince = null;
        }
        if (failingSince === null) o.onPending?.(pending);
        o.onWritten?.(batch);
        return;
      } catch (err) {
        o.onRetry?.();
        o.onPending?.(pending);
        for (const tell of waiters) tell(err);
        waiters.clear();
        if (failingSince === null) {
          failingSince = Date.now();
          log.error(`audit write failed for ${batch.length} event(s): kept, written again in order once the store answers`, err);
        }
        if (closing) {
          log.error(`audit events NOT written at shutdown: the store did not answer (${batch.length} event(s) lost)`, err);
          pending -= batch.length;
          return;
        }
        if (pending > maxPending) log.warn(`audit events waiting for the store: ${pending} (over ${maxPending}): /ready answers 503`);
        await Bun.sleep(wait);
      }
    }
  }

  function flush(): Promise<void> {
    const done = drain();
    if (failingSince !== null) return Promise.reject(storeFailure(new Error("the store does not take audit writes")));
    return new Promise<void>((resolve, reject) => {
      const tell = (err: unknown) => reject(storeFailure(err));
      waiters.add(tell);
      done.then(() => (waiters.delete(tell), resolve()));
    });
  }

  /** Hands the batch to the writer; resolves once everything handed so far is in the store. */
  function drain(): Promise<void> {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
    const batch = queued;
    queued = [];
    groups.clear();
    lastItems = items;
    items = 0;
    if (batch.length > 0) {
      pending += batch.length;
      writing = writing.then(() => write(batch));
    }
    return writing;
  }

  function push(event: AuditEvent): void {
    queued.push(event);
    items++;
    if (queued.length >= maxBatch) void drain();
    else if (timer === undefined) {
      timer = setTimeout(() => void drain(), lastItems >= BUSY_ITEMS ? busyDelayMs : delayMs);
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
    pending: () => pending + queued.length,
    overloaded: () => pending + queued.length > maxPending,
    async close(timeoutMs) {
      const done = drain();
      let timer: ReturnType<typeof setTimeout> | undefined;
      const late = new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)));
      await Promise.race([done, late]);
      clearTimeout(timer);
      if (pending > 0) {
        closing = true; // the batch being retried gives up at its next failure, and those behind it fail fast
        await done;
      }
    },
  };
}
