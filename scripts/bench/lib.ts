/**
 * Shared helpers of the benchmarks: latency statistics, two load shapes (sequential requests interleaved across
 * the things compared, so machine noise hits each alike; and a fixed number of requests spread over N concurrent
 * clients), each bounded by a request count AND a deadline, plus clean-up that runs on normal exit, on error and
 * on SIGINT/SIGTERM, with a watchdog that ends a run that hangs.
 */

/** One request: resolves when the whole response was read and checked, throws on anything unexpected. */
export type Probe = () => Promise<void>;

export interface Latencies {
  /** Milliseconds per request, in the order measured. */
  samples: number[];
}

export interface Throughput {
  requests: number;
  ms: number;
  perSecond: number;
}

export function median(xs: readonly number[]): number {
  return percentile(xs, 50);
}

/** Nearest-rank percentile (p in 0–100) of a non-empty list. */
export function percentile(xs: readonly number[], p: number): number {
  if (xs.length === 0) throw new TypeError("percentile of no samples");
  const s = [...xs].sort((a, b) => a - b);
  const rank = Math.min(s.length, Math.max(1, Math.ceil((p / 100) * s.length)));
  return s[rank - 1] as number;
}

/**
 * Runs `n` rounds of one request per probe, in turn (probe A, B, A, B, …), until `n` rounds or `deadline`
 * (a `performance.now()` value). Every probe gets the same number of samples.
 */
export async function sequential(probes: readonly Probe[], n: number, deadline: number): Promise<Latencies[]> {
  const out = probes.map(() => ({ samples: [] as number[] }));
  for (let i = 0; i < n && performance.now() < deadline; i++) {
    for (const [k, probe] of probes.entries()) {
      const t0 = performance.now();
      await probe();
      out[k]!.samples.push(performance.now() - t0);
    }
  }
  return out;
}

/** `n` requests over `clients` concurrent loops; stops issuing new ones at `deadline`. */
export async function concurrent(probe: Probe, n: number, clients: number, deadline: number): Promise<Throughput> {
  let issued = 0;
  const t0 = performance.now();
  const loop = async () => {
    while (issued < n && performance.now() < deadline) {
      issued++;
      await probe();
    }
  };
  await Promise.all(Array.from({ length: clients }, loop));
  const ms = performance.now() - t0;
  return { requests: issued, ms, perSecond: (issued / ms) * 1000 };
}

/** "0.42 ms" with two decimals under 10 ms. */
export function ms(x: number): string {
  return `${x < 10 ? x.toFixed(2) : x.toFixed(1)} ms`;
}

/** "+0.31 ms, 3.8× direct" — the difference and ratio of `x` against the baseline `base`. */
export function versus(x: number, base: number, unit: "ms" | "req/s", label = "direct"): string {
  const diff = x - base;
  const sign = diff >= 0 ? "+" : "−";
  const abs = unit === "ms" ? ms(Math.abs(diff)) : `${Math.round(Math.abs(diff)).toLocaleString("en")} req/s`;
  return `${sign}${abs}, ${(x / base).toFixed(2)}× ${label}`;
}

/**
 * Runs `main`, then `cleanup` — also on error, on SIGINT/SIGTERM, and after `limitMs` (the watchdog: a hung run
 * is cleaned up and exits 1). Exit code 0 only when `main` resolved.
 */
export async function withCleanup(main: () => Promise<void>, cleanup: () => Promise<void>, limitMs: number): Promise<never> {
  let done = false;
  const finish = async (code: number, why?: unknown) => {
    if (done) return;
    done = true;
    if (why !== undefined) console.error(why instanceof Error ? (why.stack ?? why.message) : String(why));
    try {
      await cleanup();
    } catch (err) {
      console.error("clean-up failed:", err);
      code ||= 1;
    }
    process.exit(code);
  };
  const onSignal = (signal: NodeJS.Signals) => void finish(130, `interrupted by ${signal}`);
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  const watchdog = setTimeout(() => void finish(1, `gave up after ${Math.round(limitMs / 1000)} s`), limitMs);
  try {
    await main();
    clearTimeout(watchdog);
    await finish(0);
  } catch (err) {
    clearTimeout(watchdog);
    await finish(1, err);
  }
  // finish() exits the process; this only satisfies the type.
  return new Promise<never>(() => {});
}
