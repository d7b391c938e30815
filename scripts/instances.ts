/**
 * DESIGN §24, measured: three `ath serve` instances (the built binary, dist/ath) on one PostgreSQL database (a random
 * schema of its own, dropped at the end), reached through a TCP proxy that refuses, resets and stalls connections, in
 * front of a sample API that counts what it received (tests/helpers/instances.ts, shared with
 * tests/e2e/instances-faults.test.ts). Prints each figure beside its bound, and exits 1 if one is missed.
 *
 *   bun scripts/instances.ts [--scale small|full] [--runs N] [--races N] [--outage-ms N] [--timeout-ms N] [--json]
 *
 * PostgreSQL: ATH_TEST_POSTGRES_URL (default postgres://postgres@127.0.0.1:5432/test). Builds dist/ath when missing.
 */
import { parseArgs } from "node:util";
import { ensureBinary } from "../tests/helpers/cli-binary.ts";
import { exactBudget, killOne, outage, parkedApprovals, revocationRaces, startFleet, type Fleet } from "../tests/helpers/instances.ts";

const SCALES = {
  small: { runs: 1, calls: 1_500, limit: 100, concurrency: 32, parked: 5, races: 20, killedRaces: 10, outageMs: 2_000, killCalls: 300 },
  full: { runs: 3, calls: 10_000, limit: 500, concurrency: 64, parked: 20, races: 200, killedRaces: 50, outageMs: 5_000, killCalls: 2_000 },
} as const;

const { values } = parseArgs({
  options: {
    scale: { type: "string", default: "small" },
    runs: { type: "string" },
    races: { type: "string" },
    "outage-ms": { type: "string" },
    "timeout-ms": { type: "string", default: "1000" },
    json: { type: "boolean", default: false },
  },
});
const scale = SCALES[values.scale as keyof typeof SCALES];
if (!scale) throw new Error(`--scale small|full, not ${values.scale}`);
const runs = Number(values.runs ?? scale.runs);
const races = Number(values.races ?? scale.races);
const outageMs = Number(values["outage-ms"] ?? scale.outageMs);
const timeoutMs = Number(values["timeout-ms"]);

interface Figure { bound: string; figure: string; ok: boolean }
const figures: Figure[] = [];
const ms = (n: number) => `${Math.round(n)} ms`;
function report(bound: string, figure: string, ok: boolean): void {
  figures.push({ bound, figure, ok });
  if (!values.json) console.log(`${ok ? "ok  " : "MISS"}  ${bound.padEnd(70)}  ${figure}`);
}

ensureBinary();
const started = Date.now();
const fleet: Fleet = await startFleet({ limit: scale.limit, timeoutMs, pool: 8 });
try {
  if (!values.json) console.log(`three instances on one PostgreSQL (schema ${fleet.schema}), store deadline ${timeoutMs} ms, scale ${values.scale}\n`);

  const budgets = [];
  for (let i = 0; i < runs; i++) budgets.push(await exactBudget(fleet, { calls: scale.calls, concurrency: scale.concurrency }));
  report(
    `exact budgets: ${scale.calls} concurrent calls vs ${scale.limit}, ${runs} run(s) → ${scale.limit} forwarded`,
    `forwarded ${budgets.map((b) => b.forwarded).join(", ")}; other than 200/429: ${budgets.reduce((n, b) => n + b.other, 0)} ${JSON.stringify(Object.assign({}, ...budgets.map((b) => b.otherStatuses)))}; ${ms(Math.max(...budgets.map((b) => b.ms)))} a run at most`,
    budgets.every((b) => b.forwarded === scale.limit),
  );

  const parked = await parkedApprovals(fleet, scale.parked);
  report(`parked calls approved at two instances, sent at three → forwarded once each`, `${parked.forwarded} forwarded for ${parked.parked} parked`, parked.forwarded === parked.parked);

  const plain = await revocationRaces(fleet, { races, killListeners: false, boundMs: 1_000 });
  report(`revocation at A refused at B and C: p99 ≤ 1 s (${plain.races} races)`, `p50 ${plain.p50.toFixed(1)} ms, p99 ${plain.p99.toFixed(1)} ms, max ${plain.max.toFixed(1)} ms; forwarded after the bound: ${plain.forwardedAfterBound}`, plain.p99 <= 1_000 && plain.forwardedAfterBound === 0);
  const killed = await revocationRaces(fleet, { races: Math.max(1, Math.round(races / 4)), killListeners: true, boundMs: 2_000 });
  report(`… with every LISTEN connection killed (pg_terminate_backend): ≤ 2 s`, `p50 ${killed.p50.toFixed(1)} ms, p99 ${killed.p99.toFixed(1)} ms, max ${killed.max.toFixed(1)} ms; forwarded after the bound: ${killed.forwardedAfterBound}`, killed.p99 <= 2_000 && killed.forwardedAfterBound === 0);

  for (const fault of ["refuse", "reset", "stall"] as const) {
    const r = await outage(fleet, { fault, outageMs, concurrency: 8 });
    const bound = fault === "refuse" ? 1_000 : timeoutMs + 500;
    report(`PostgreSQL ${fault} for ${outageMs} ms: every write 503 + Retry-After within ${bound} ms`, `${r.writes503}/${r.writes} writes 503 (${r.writesAfter} done once back), none claimed (${r.writesClaimed}); slowest ${ms(r.slowestWriteMs)}; proxied calls slowest ${ms(r.slowestCallMs)}`, r.writesClaimed === 0 && r.writes503 + r.writesAfter === r.writes && r.slowestWriteMs < bound);
    report(`… every instance serves writes again within 5 s of PostgreSQL back`, r.recoveryMs.map(ms).join(", "), r.recoveryMs.every((m) => m < 5_000));
    report(`… every 200 in the exported chain, which verifies`, `${r.inChain} of ${r.answered200} calls answered 200; chain of ${r.chainRecords} records ${r.chainVerifies ? "verifies" : "DOES NOT VERIFY"}`, r.inChain === r.answered200 && r.chainVerifies);
    report(`… budget counts without a forwarded call = 0`, `${r.countedNotForwarded} (calls forwarded but not answered 200: ${r.forwardedNot200})`, r.countedNotForwarded === 0);
  }

  const k = await killOne(fleet, { calls: scale.killCalls, concurrency: scale.concurrency });
  report(`kill -9 of one instance under load: the others keep answering`, `${k.survivors200}/${k.callsToSurvivors} calls to the others answered (200 or 429)`, k.survivors200 === k.callsToSurvivors);
  report(`… budgets exact (≤ limit), chain verifies, the killed one restarts and joins`, `${k.budgetForwarded} forwarded vs ${k.budgetLimit}; chain ${k.chainVerifies ? "verifies" : "DOES NOT VERIFY"}; rejoined in ${ms(k.rejoinMs)}`, k.budgetForwarded <= k.budgetLimit && k.chainVerifies);
} finally {
  await fleet.stop();
}
const missed = figures.filter((f) => !f.ok).length;
if (values.json) console.log(JSON.stringify({ scale: values.scale, timeoutMs, figures }, null, 2));
else console.log(`\n${figures.length - missed}/${figures.length} bounds held; ${((Date.now() - started) / 1000).toFixed(0)} s`);
process.exit(missed ? 1 : 0);
