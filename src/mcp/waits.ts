/**
 * The authorizations `ath mcp` is waiting on: each is `authorizeAndWait` (the loopback receiver of `authorize
 * --wait`) running in the background after `ath_authorize` has answered, one per provider, until its code arrives
 * and is exchanged, it fails, or it is replaced or cancelled. `ath_token` picks the outcome up.
 */
import type { Authorization } from "../agent/flows/authorize.ts";
import type { Exchanged } from "../agent/flows/exchange.ts";

export type Started = Authorization & { user_redirect_uri: string };

export interface Wait {
  provider: string;
  /** Resolves once the session is started (the URL can be shown); rejects if the start failed. */
  started: Promise<Started>;
  /** Resolves once the code has arrived and the token is saved. */
  done: Promise<Exchanged>;
  /** The started authorization, once `started` has resolved. */
  info?: Started;
  /** The outcome, once there is one. */
  settled?: { ok: Exchanged } | { error: unknown };
  cancel(): void;
}

/** Runs an authorization: `onStarted` is called once its session exists, `signal` ends it early. */
export type Run = (signal: AbortSignal, onStarted: (a: Started) => void) => Promise<Exchanged>;

export class Waits {
  readonly #byProvider = new Map<string, Wait>();

  /** Starts a wait for `provider`, replacing (and cancelling) the one already running for it. */
  start(provider: string, run: Run): Wait {
    this.cancel(provider);
    const controller = new AbortController();
    let startedSettle!: { resolve: (a: Started) => void; reject: (e: unknown) => void };
    const started = new Promise<Started>((resolve, reject) => (startedSettle = { resolve, reject }));
    const wait: Wait = { provider, started, done: Promise.resolve() as never, cancel: () => controller.abort() };
    wait.done = run(controller.signal, (a) => {
      wait.info = a;
      startedSettle.resolve(a);
    });
    // Handlers are attached at once: a wait nobody asks about must not become an unhandled rejection.
    wait.done.then(
      (ok) => (wait.settled = { ok }),
      (error: unknown) => {
        wait.settled = { error };
        startedSettle.reject(error);
      },
    );
    started.catch(() => undefined);
    this.#byProvider.set(provider, wait);
    return wait;
  }

  /** The wait for `provider`, or with none named the only one; undefined when there is none (or several). */
  find(provider?: string): Wait | undefined {
    if (provider !== undefined) return this.#byProvider.get(provider);
    return this.#byProvider.size === 1 ? [...this.#byProvider.values()][0] : undefined;
  }

  /** Forgets `wait` if it is still the current one for its provider (its outcome has been reported). */
  forget(wait: Wait): void {
    if (this.#byProvider.get(wait.provider) === wait) this.#byProvider.delete(wait.provider);
  }

  /** Cancels and forgets the wait for `provider` (its pending session is abandoned). */
  cancel(provider: string): void {
    const w = this.#byProvider.get(provider);
    if (w === undefined) return;
    this.#byProvider.delete(provider);
    w.cancel();
  }

  /** Cancels every wait and lets each abandon its pending session (the server is closing). */
  async closeAll(): Promise<void> {
    const all = [...this.#byProvider.values()];
    this.#byProvider.clear();
    for (const w of all) w.cancel();
    await Promise.allSettled(all.map((w) => w.done));
  }
}

/** How often a waiting tool call reports progress (hosts may restart their timeout on each report). */
const PROGRESS_EVERY_MS = 5_000;

/**
 * `"done"` once `wait` has an outcome, `"timeout"` after `ms`, `"aborted"` when `signal` ends first; `tick` is
 * called every few seconds meanwhile.
 */
export function settleWithin(wait: Wait, ms: number, signal?: AbortSignal, tick?: () => void): Promise<"done" | "timeout" | "aborted"> {
  if (wait.settled !== undefined) return Promise.resolve("done");
  return new Promise((resolve) => {
    const timer = setTimeout(() => finish("timeout"), ms);
    const ticker = tick === undefined ? undefined : setInterval(tick, PROGRESS_EVERY_MS);
    const onAbort = () => finish("aborted");
    const finish = (r: "done" | "timeout" | "aborted") => {
      clearTimeout(timer);
      clearInterval(ticker);
      signal?.removeEventListener("abort", onAbort);
      resolve(r);
    };
    signal?.addEventListener("abort", onAbort);
    wait.done.then(
      () => finish("done"),
      () => finish("done"),
    );
  });
}
