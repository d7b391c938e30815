/**
 * WAL checkpoints off the event loop. With SQLite's automatic checkpoint the checkpoint — copying the WAL's pages
 * into the database file and two fsyncs — runs inside whichever statement commits past the threshold, on the JS
 * thread: under a stream of audit batches that was a few ms of blocked event loop per batch or two (the COMMIT was
 * ≈ 5% of a loaded gateway's profile). Here a Bun Worker with its own connection to the same file runs
 * `PRAGMA wal_checkpoint(PASSIVE)`, at most once every CHECKPOINT_EVERY_MS after a write (CHECKPOINT_BUSY_MS when
 * writes come fast), one at a time; while it
 * runs, the gateway's connection holds its writes back (they wait asynchronously — `exclusive`, given by the driver;
 * reads go on), so the checkpoint always reaches the WAL's end.
 *
 * What bounds the WAL: a checkpoint that reached the WAL's end lets the next write start the WAL over from its first
 * page, so the WAL holds about one interval's writes. Should another process's commits keep landing during
 * checkpoints, or the worker fail, the gateway's own connection still checkpoints automatically at BACKSTOP_PAGES.
 */
/**
 * Checkpoints are at most this often while writes are few (a checkpoint follows the first write after one, this long
 * after the last). Each one costs two fsyncs and the copy of what changed here, and one more fsync on the gateway's
 * own thread: the first write after a completed checkpoint restarts the WAL, and SQLite syncs the new WAL header in
 * that write (synchronous=NORMAL). A gateway writing an audit batch every 50 ms lost throughput to that in proportion
 * to the checkpoints' rate (scripts/bench/wrk.ts GET, one core, each against the build without the audit record in
 * the same run; noisy: every 50 ms 0.89–0.91×, every 500 ms 0.73–0.97×, every 5 s 0.94× in one run beside 500 ms's
 * 0.83×). The WAL then holds about five seconds of steady writes — grouped audit records and tokens: a few hundred pages.
 */
export const CHECKPOINT_EVERY_MS = 5000;
/**
 * …and this often once BUSY_ROWS rows were changed since the last one (a sweep's batches, a backlog of ungrouped
 * audit records): the WAL stays small where it grows fast. A gateway's steady writes change a row or a few each.
 */
export const CHECKPOINT_BUSY_MS = 50;
export const BUSY_ROWS = 1000;
/** The gateway connection's wal_autocheckpoint while the worker runs: a bound, not the usual path. */
export const BACKSTOP_PAGES = 4000;

export interface Checkpointer {
  /** Tells it the connection committed a write that changed `rows` rows. */
  wrote(rows: number): void;
  /** Checkpoints now (waits for a running one first); resolves when done. */
  checkpoint(): Promise<CheckpointResult>;
  /** Stops the worker, after closing its connection. */
  close(): Promise<void>;
}

export interface CheckpointResult {
  busy: number;
  log: number;
  checkpointed: number;
}

// The worker's code, inline: a Blob worker needs no file of its own next to a compiled binary.
const WORKER_SOURCE = `
import { Database } from "bun:sqlite";
let db = null;
self.onmessage = (ev) => {
  const m = ev.data;
  try {
    if (m.op === "open") {
      db = new Database(m.path, { readwrite: true, create: false });
      db.exec("PRAGMA busy_timeout = 5000");
      postMessage({ op: "open" });
    } else if (m.op === "checkpoint") {
      const r = db.query("PRAGMA wal_checkpoint(PASSIVE)").get();
      postMessage({ op: "checkpoint", result: r });
    } else if (m.op === "close") {
      if (db) db.close();
      db = null;
      postMessage({ op: "close" });
    }
  } catch (err) {
    postMessage({ op: m.op, error: String(err && err.message || err) });
  }
};
`;

let workerUrl: string | undefined;

/**
 * Starts a checkpointer for the SQLite file at `path`; `onReady` runs once its connection is open (the caller then
 * raises its own connection's wal_autocheckpoint to the backstop), `onFailed` if it could not start or a checkpoint
 * failed (the caller falls back to automatic checkpoints).
 */
export function startCheckpointer(
  path: string,
  o: {
    onReady: () => void;
    onFailed: (err: unknown) => void;
    /** Runs `fn` with the connection's writes held back until it settles. */
    exclusive: (fn: () => Promise<void>) => Promise<void>;
  },
): Checkpointer {
  workerUrl ??= URL.createObjectURL(new Blob([WORKER_SOURCE], { type: "application/javascript" }));
  const worker = new Worker(workerUrl);
  (worker as unknown as { unref(): void }).unref(); // a CLI command that opened the store still exits
  let ready = false;
  let failed = false;
  let closed = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let lastStart = 0;
  /** Rows changed since the running or last checkpoint started. */
  let rows = 0;
  /** The running checkpoint's waiters, and whether another is wanted after it. */
  let running: ((r: CheckpointResult) => void)[] | null = null;
  let again = false;
  let waiting: (() => void) | undefined;
  const NONE: CheckpointResult = { busy: 1, log: -1, checkpointed: -1 };
  /** The running checkpoint ended (with its result, or NONE): its waiters, exclusive's hold among them, go on. */
  const settle = (r: CheckpointResult) => {
    const done = running ?? [];
    running = null;
    for (const resolve of done) resolve(r);
  };
  const fail = (err: unknown) => {
    settle(NONE);
    waiting?.();
    if (failed) return;
    failed = true;
    o.onFailed(err);
  };

  worker.onmessage = (ev: MessageEvent) => {
    const m = ev.data as { op: string; error?: string; result?: CheckpointResult };
    if (m.error !== undefined) return fail(new Error(`WAL checkpointer: ${m.op}: ${m.error}`));
    if (m.op === "open") {
      ready = true;
      o.onReady();
    } else if (m.op === "checkpoint") {
      settle(m.result ?? NONE);
      if (again) {
        again = false;
        schedule(0);
      }
    } else if (m.op === "close") waiting?.();
  };
  worker.onerror = (ev) => fail(ev.error ?? new Error(String(ev.message)));
  worker.postMessage({ op: "open", path });

  function run(): Promise<CheckpointResult> {
    return new Promise((resolve) => {
      if (running) {
        running.push(resolve);
        return;
      }
      const waiters: ((r: CheckpointResult) => void)[] = [resolve];
      running = waiters;
      lastStart = Date.now();
      rows = 0;
      void o.exclusive(
        () =>
          new Promise<void>((done) => {
            waiters.push(() => done());
            if (failed || closed) settle(NONE);
            else worker.postMessage({ op: "checkpoint" });
          }),
      );
    });
  }
  /** `changed`: rows the write changed (none when a checkpoint that ran asks for the next one). */
  function schedule(changed: number): void {
    const wasBusy = rows >= BUSY_ROWS;
    rows += changed;
    if (closed || failed || !ready) return;
    if (running) {
      again = true;
      return;
    }
    const busy = rows >= BUSY_ROWS;
    if (timer !== undefined) {
      if (!busy || wasBusy) return;
      clearTimeout(timer); // writes just turned busy: the sooner checkpoint replaces the quiet one
    }
    timer = setTimeout(() => {
      timer = undefined;
      if (closed || failed) return;
      void run();
    }, Math.max(0, lastStart + (busy ? CHECKPOINT_BUSY_MS : CHECKPOINT_EVERY_MS) - Date.now()));
    timer.unref();
  }

  return {
    wrote: schedule,
    async checkpoint() {
      if (!ready || failed || closed) return NONE;
      if (running) await new Promise<CheckpointResult>((resolve) => running!.push(resolve));
      return run();
    },
    async close() {
      if (closed) return;
      closed = true;
      if (timer !== undefined) clearTimeout(timer);
      if (running) await new Promise<CheckpointResult>((resolve) => running!.push(resolve));
      // Its connection closed before the gateway's: the last one to close checkpoints and removes the WAL.
      // at most 2 s; the timer is cleared once the worker answers, or it would keep the process alive those 2 s
      let closing: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([
        new Promise<void>((resolve) => {
          waiting = resolve;
          worker.postMessage({ op: "close" });
        }),
        new Promise<void>((resolve) => {
          closing = setTimeout(resolve, 2000);
        }),
      ]);
      clearTimeout(closing);
      worker.terminate();
    },
  };
}
