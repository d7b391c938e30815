/**
 * Instructions per warm proxied call, counted rather than timed: `valgrind --tool=callgrind` runs the in-process
 * gateway (tests/helpers/in-process.ts: in-memory SQLite, a scripted provider answering from memory) through the
 * proxy's own entry for two lengths of run, and the difference over the calls between them is one steady call's
 * instructions — its compiles, done in the first thousands of calls, fall out (the shorter run has them too). With
 * JavaScriptCore's concurrent JIT and GC off (they would count on other threads, or not at all). What runs on timers
 * (the audit queue's batches every 50–250 ms, the GC's own schedule) is counted at valgrind's pace, so a figure moves
 * with the machine's load: one tree read 81,684, 82,259 and 84,292 instructions per GET in three runs, another 71,496
 * and 86,128 in two runs under different loads. Compare trees within one invocation only: its runs of one length go
 * side by side, two at a time, under the same load. A count is not a time — the proxy's HTTP threads, the kernel and
 * the caches are not in it — so a step is kept on both: fewer instructions here, and no loss in `wrk.ts --ab`.
 *
 * Usage: bun scripts/bench/instructions.ts [--post] [--from 9000] [--to 15000] TREE [TREE…]
 * Each TREE is a checkout of ath (a git worktree of another commit: `git worktree add /tmp/a COMMIT`, with node_modules
 * linked in); the runs go two at a time. Needs valgrind. A run of 15,000 calls takes about four minutes.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";

const args = process.argv.slice(2);
const flag = (name: string, fallback: string) => {
  const i = args.indexOf(name);
  const v = args[i + 1];
  return i >= 0 && v !== undefined && !v.startsWith("--") ? v : fallback;
};
const post = args.includes("--post");
const from = Number(flag("--from", "9000"));
const to = Number(flag("--to", "15000"));
const trees = args.filter((a, i) => !a.startsWith("--") && !["--from", "--to"].includes(args[i - 1] ?? "")).map((t) => resolve(t));
if (trees.length === 0 || !(to > from && from >= 0)) {
  console.error("usage: bun scripts/bench/instructions.ts [--post] [--from 9000] [--to 15000] TREE [TREE…]");
  process.exit(2);
}
if (Bun.spawnSync(["which", "valgrind"]).exitCode !== 0) {
  console.error("valgrind not found: apt-get install -y valgrind");
  process.exit(1);
}

const dir = mkdtempSync(join(tmpdir(), "ath-instructions-"));
const driver = join(import.meta.dir, "instructions-driver.ts");

/** Instructions of one run of `calls` warm calls through `tree`'s gateway. */
async function count(tree: string, calls: number): Promise<number> {
  const out = join(dir, `${Math.random().toString(36).slice(2)}.callgrind`);
  const p = Bun.spawn(["valgrind", "--tool=callgrind", `--callgrind-out-file=${out}`, process.execPath, driver, tree, String(calls), post ? "post" : "get"], {
    env: { ...process.env, BUN_JSC_useConcurrentJIT: "0", BUN_JSC_useConcurrentGC: "0" },
    stdout: "ignore",
    stderr: "pipe",
  });
  const err = await new Response(p.stderr).text();
  const code = await p.exited;
  const m = /Collected : (\d+)/.exec(err);
  if (code !== 0 || !m) throw new Error(`${tree} (${calls} calls): valgrind exited ${code}\n${err.slice(-2000)}`);
  return Number(m[1]);
}

/** Runs `jobs` two at a time (a 2-CPU machine: one valgrind per CPU). */
async function inPairs<T>(jobs: (() => Promise<T>)[]): Promise<T[]> {
  const results: T[] = new Array(jobs.length);
  let next = 0;
  const worker = async () => {
    while (next < jobs.length) {
      const i = next++;
      results[i] = await jobs[i]!();
    }
  };
  await Promise.all([worker(), worker()]);
  return results;
}

try {
  // All the short runs first, then all the long ones: two trees' runs of one length go side by side, under the same load.
  const counts = await inPairs([...trees.map((t) => () => count(t, from)), ...trees.map((t) => () => count(t, to))]);
  console.log(`${post ? "POST 1 KiB" : "GET small"}: instructions per warm call, calls ${from + 1}–${to} after 3,000 uncounted (callgrind, concurrent JIT and GC off)`);
  const per = trees.map((_, i) => (counts[trees.length + i]! - counts[i]!) / (to - from));
  trees.forEach((t, i) => console.log(`  ${t}  ${Math.round(per[i]!).toLocaleString("en-US")}${i === 0 ? "" : `   ${(per[i]! / per[0]!).toFixed(3)}× the first`}`));
} finally {
  rmSync(dir, { recursive: true, force: true });
}
