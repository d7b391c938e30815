/**
 * The proxy hop measured the way DESIGN §13 states its budget: an external load generator (wrk) at 64 connections
 * against the same upstream, each proxy pinned to one CPU of its own (taskset), interleaved rounds, medians — and
 * ratios against a bare Bun pass-through hop measured in the same run. Also: added latency at one connection (p50,
 * p99 over direct), read twice in each round — by wrk, and by a client loop of our own that keeps every request's time
 * (scripts/bench/loop-client.ts: wrk's one-connection p99 moved by a millisecond between runs for the bare hop too) —
 * and each proxy's peak RSS under 100 connections, split into anonymous memory and file pages.
 *
 * Layout on a 2-CPU machine: the proxy under load (bare hop, or ath) alone on CPU 0; wrk, the upstream API and the
 * benchmark's own processes (oidc-provider for the one consent flow) on CPU 1. Unpinned, ath spreads over both CPUs
 * (GC, the HTTP client thread) and hides its cost rather than removing it.
 *
 * Needs wrk and taskset: `apt-get install -y wrk util-linux`, and a built binary (`npx bun run build`).
 *
 * Usage: bun scripts/bench/wrk.ts [--duration 5] [--rounds 3] [--postgres [postgres://postgres@127.0.0.1:5432/test]]
 *          [--bin dist/ath] [--compare OTHER_BIN[,OTHER_BIN…]] [--ab] [--tokens N] [--check]
 * --compare: other ath binaries (e.g. builds of older commits) measured in the same rounds, on SQLite.
 * --ab: only ath and the --compare binaries, throughput only (no direct, bare hop, latency or RSS), each binary run as
 *   --instances processes (default 3), started interleaved (A1 B1 A2 B2 …): one process of a binary can run a few per
 *   cent faster or slower than another of the same binary for its whole life (two copies of one build measured 1.04–1.05×
 *   apart), which one instance each would take for the builds' difference. Each round measures every process once
 *   (order alternating), and each round's ratio — the A processes' mean req/s over the B processes' — is taken within
 *   the round, so the machine's drift between rounds cancels (after WARM_UP_S uncounted seconds per process and
 *   shape); then the median over rounds, with their spread, each process's median, and the CPU time per
 *   request by thread. scripts/bench/audit-wrk.ts runs it against a build without the per-call audit record.
 * --latency-only: no throughput rounds (the warm-up still runs), only the latency at one connection and the RSS.
 * --only GET|POST: measure that shape only (a profile of one shape: --cpu-prof with --only POST).
 * --tokens: rows to add to the SQLite gateway's token table before measuring (scale: 1,000 vs 1,000,000).
 * --cpu-prof DIR: the SQLite gateway (and, with --postgres, the PostgreSQL one) runs from source with Bun's CPU profiler and writes its profile (.md too) there; the bare
 *   hop is profiled too (read both with scripts/bench/profile-top.ts).
 */
import { Database } from "bun:sqlite";
import { SQL } from "bun";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fullFlow } from "../../tests/helpers/agent.ts";
import { freePort } from "../../tests/helpers/net.ts";
import { startUpstreamAuth, type UpstreamAuth } from "../../tests/helpers/upstream-auth.ts";
import { median, withCleanup } from "./lib.ts";

const REPO = resolve(import.meta.dir, "../..");
const args = process.argv.slice(2);
const flag = (name: string, fallback: string) => {
  const i = args.indexOf(name);
  const v = args[i + 1];
  return i >= 0 && v !== undefined && !v.startsWith("--") ? v : fallback;
};
const duration = Math.max(1, Number(flag("--duration", "5")));
const rounds = Math.max(1, Number(flag("--rounds", "3")));
const bin = resolve(flag("--bin", join(REPO, "dist/ath")));
const compare = args.includes("--compare") ? flag("--compare", "").split(",").filter(Boolean).map((b) => resolve(b)) : [];
const pgUrl = args.includes("--postgres") ? flag("--postgres", "postgres://postgres@127.0.0.1:5432/test") : undefined;
const extraTokens = Number(flag("--tokens", "0"));
const check = args.includes("--check");
const ab = args.includes("--ab");
const instances = Math.max(1, Number(flag("--instances", "3")));
const latencyOnly = args.includes("--latency-only");
if (ab && compare.length === 0) {
  console.error("--ab needs --compare OTHER_BIN");
  process.exit(2);
}
const cpuProf = args.includes("--cpu-prof") ? resolve(flag("--cpu-prof", "bench-profiles")) : undefined;
for (const tool of ["wrk", "taskset"]) {
  if (Bun.spawnSync(["which", tool]).exitCode !== 0) {
    console.error(`${tool} not found: apt-get install -y wrk util-linux`);
    process.exit(1);
  }
}
/**
 * Uncounted seconds of load per process and shape before any round (both modes): JavaScriptCore compiles ath's hot
 * paths through three tiers for its first seconds under load — its JIT thread (JITWorker) took up to 7 µs of CPU per
 * request over the rounds of a shape measured without this — and a run measures the steady state a gateway lives in.
 */
const WARM_UP_S = 3;
const LOAD_CPU = "0"; // the proxy under test
const REST_CPU = "1"; // wrk, the upstream, this process
// all of this process's threads (-a): the access logs it drains are the rest's work, not the proxy's
Bun.spawnSync(["taskset", "-a", "-pc", REST_CPU, String(process.pid)], { stdout: "ignore" });

const SMALL = JSON.stringify({ id: "msg_1", subject: "Quarterly numbers", unread: true, labels: ["inbox"] });
const POST_BODY = JSON.stringify({ data: "x".repeat(1024 - 11) });
const ALL_SHAPES = [
  { name: "GET small JSON", method: "GET", path: "/small" },
  { name: "POST 1 KiB JSON", method: "POST", path: "/items" },
] as const;
const only = flag("--only", "").toUpperCase();
const SHAPES = only === "" ? ALL_SHAPES : ALL_SHAPES.filter((s) => s.method === only);
if (SHAPES.length === 0) {
  console.error("--only takes GET or POST");
  process.exit(2);
}
type Shape = (typeof ALL_SHAPES)[number];

/** The upstream API in its own process: accepts the bearer tokens posted to /__accept, answers fixed bodies. */
const UPSTREAM_CODE = `
const accepted = new Set();
const small = ${JSON.stringify(SMALL)};
const s = Bun.serve({ hostname: "127.0.0.1", port: 0, async fetch(req) {
  const path = new URL(req.url).pathname;
  if (path === "/__accept") { accepted.add(await req.text()); return new Response("ok"); }
  const bearer = (req.headers.get("authorization") ?? "").slice(7);
  if (!accepted.has(bearer)) return Response.json({ error: "invalid_token" }, { status: 401 });
  if (req.method === "GET" && path === "/small") return new Response(small, { headers: { "content-type": "application/json" } });
  if (req.method === "POST" && path === "/items") return Response.json({ received: (await req.arrayBuffer()).byteLength }, { status: 201 });
  return Response.json({ error: "not_found" }, { status: 404 });
} });
console.log(s.port);`;

/** The reference hop: forwards every request as is (POST bodies buffered, as ath buffers replayable ones). */
const HOP_CODE = `
const up = process.env.UPSTREAM;
process.on("SIGTERM", () => process.exit(0)); // a clean exit, so a profiler writes its profile
const s = Bun.serve({ hostname: "127.0.0.1", port: 0, async fetch(req) {
  const u = new URL(req.url);
  const body = req.method === "GET" || req.method === "HEAD" ? undefined : await req.arrayBuffer();
  const res = await fetch(up + u.pathname + u.search, { method: req.method, headers: req.headers, body, redirect: "manual", decompress: false });
  return new Response(res.body, { status: res.status, headers: res.headers });
} });
console.log(s.port);`;

interface Target {
  name: string;
  url: string;
  token: string;
  pid?: number;
}

const procs: ReturnType<typeof Bun.spawn>[] = [];
/** Pids of the processes startBun started, by name (the bare hop's CPU time is read from /proc). */
const pids = new Map<string, number>();
const CLOCK_TICKS = Number(Bun.spawnSync(["getconf", "CLK_TCK"]).stdout.toString().trim()) || 100;
/** Every figure measured, for --check. */
const results: { shape: string; target: string; rps: number; ratio: number | null; cpuUs: number | null; p50Added?: number; p99Added?: number; loopP99Added?: number }[] = [];
const dirs: string[] = [];
let auth: UpstreamAuth | undefined;
let schema: string | undefined;
let pgPinned: { restore(): void } | undefined;
/** Upstream access tokens of the gateways' flows, which the upstream was told to accept. */
const upstreamTokens: string[] = [];

await withCleanup(
  async () => {
    const upstream = await startBun("upstream", UPSTREAM_CODE, REST_CPU, {});
    if (ab) {
      const binaries = [bin, ...compare];
      const ports = await Promise.all(Array.from({ length: instances * binaries.length }, () => freePort()));
      auth = await startUpstreamAuth({ redirectUris: ports.map((p) => `http://127.0.0.1:${p}/ath/callback`) });
      const groups: Target[][] = binaries.map(() => []);
      for (let i = 0; i < instances; i++) {
        for (const [b, binary] of binaries.entries()) {
          groups[b]!.push(await startAth(`${b === 0 ? "A" : `B${compare.length > 1 ? b : ""}`}${i + 1}`, binary, ports[i * binaries.length + b]!, upstream, []));
        }
      }
      return abRounds(groups);
    }
    const hop = await startBun("bare hop", HOP_CODE, LOAD_CPU, { UPSTREAM: upstream });
    const gatewayPorts = [await freePort(), await freePort(), ...(await Promise.all(compare.map(() => freePort())))];
    auth = await startUpstreamAuth({ redirectUris: gatewayPorts.map((p) => `http://127.0.0.1:${p}/ath/callback`) });
    const targets: Target[] = [];
    const athSqlite = await startAth("ath (SQLite)", cpuProf ? "source" : bin, gatewayPorts[0]!, upstream, []);
    if (extraTokens > 0) await addTokens(athSqlite, extraTokens);
    targets.push(athSqlite);
    for (const [i, other] of compare.entries()) targets.push(await startAth(`compared: ${other} (SQLite)`, other, gatewayPorts[2 + i]!, upstream, []));
    if (pgUrl) {
      schema = `bench_${crypto.randomUUID().slice(0, 8)}`;
      const db = new URL(pgUrl);
      db.searchParams.set("schema", schema);
      targets.push(await startAth("ath (PostgreSQL)", cpuProf ? "source" : bin, gatewayPorts[1]!, upstream, ["--db", db.href]));
      pgPinned = await pinPostgres(pgUrl);
    }
    const upstreamToken = upstreamTokens[0]!; // what direct and the bare hop present: a token the upstream accepts
    const all: Target[] = [{ name: "direct", url: upstream, token: upstreamToken }, { name: "bare hop", url: hop, token: upstreamToken, pid: pids.get("bare hop")! }, ...targets];
    console.log(`wrk: ${rounds} interleaved rounds of ${duration} s, 64 connections, 1 thread; proxies pinned to CPU ${LOAD_CPU}, wrk and the upstream to CPU ${REST_CPU}`);
    console.log(`ath: ${bin}${extraTokens ? `; ${extraTokens.toLocaleString("en")} extra tokens in the SQLite gateway's store` : ""}\n`);

    for (const shape of SHAPES) {
      const rate = new Map<string, number[]>(all.map((t) => [t.name, []]));
      const cpu = new Map<string, number[]>(all.map((t) => [t.name, []]));
      /** The last round's split of CPU per request over the proxy's threads. */
      const threads = new Map<string, string>();
      for (const t of all) await wrk(t, shape, 64, WARM_UP_S); // not counted: each process's first seconds of a shape are its JIT's
      for (let r = 0; r < (latencyOnly ? 0 : rounds); r++) {
        const order = r % 2 === 0 ? all : [...all].reverse();
        for (const t of order) {
          const w = await wrk(t, shape, 64, duration);
          rate.get(t.name)!.push(w.rps);
          if (w.cpuUs !== null) cpu.get(t.name)!.push(w.cpuUs);
          if (w.threads) threads.set(t.name, w.threads);
        }
      }
      const hopCpu = latencyOnly ? 0 : median(cpu.get("bare hop")!);
      if (!latencyOnly) console.log(`── ${shape.name}: throughput (median req/s), 64 connections; the proxy's CPU time per request (all its threads)`);
      for (const t of latencyOnly ? [] : all) {
        const rps = median(rate.get(t.name)!);
        // each round's ratio, taken within the round (the hop measured beside it), then their median: the machine's drift
        // between rounds cancels, and the spread says how far one round can be trusted
        const rounds_ = rate.get(t.name)!.map((x, i) => x / rate.get("bare hop")![i]!);
        const ratio = median(rounds_);
        const spread = rounds_.length > 1 ? ` (rounds ${Math.min(...rounds_).toFixed(2)}–${Math.max(...rounds_).toFixed(2)})` : "";
        const vs = t.name === "direct" ? "" : t.name === "bare hop" ? "  (the reference)" : `  ${ratio.toFixed(2)}× bare hop${spread}`;
        const us = cpu.get(t.name)!.length ? median(cpu.get(t.name)!) : null;
        const cpuText = us === null ? "" : `   ${us.toFixed(1).padStart(6)} µs CPU/request${t.name === "bare hop" ? "" : ` (+${(us - hopCpu).toFixed(1)}; bare/this ${(hopCpu / us).toFixed(2)}×)`}`;
        console.log(`  ${t.name.padEnd(44)} ${Math.round(rps).toLocaleString("en").padStart(8)}${vs}${cpuText}`);
        results.push({ shape: shape.name, target: t.name, rps, ratio: t.name === "direct" ? null : ratio, cpuUs: us });
      }
      for (const [name, split] of threads) console.log(`   µs per request by thread, ${name}: ${split}`);
      const byWrk = new Map<string, Latency[]>(all.map((t) => [t.name, []]));
      const byLoop = new Map<string, Latency[]>(all.map((t) => [t.name, []]));
      for (let r = 0; r < rounds; r++) {
        for (const t of r % 2 === 0 ? all : [...all].reverse()) {
          byWrk.get(t.name)!.push(await wrk(t, shape, 1, Math.max(2, Math.ceil(duration / 2))));
          byLoop.get(t.name)!.push(await loop(t, shape, Math.max(2, Math.ceil(duration / 2))));
        }
      }
      const wrkAdded = latencyTable("latency at 1 connection, read by wrk: p50 / p99, and added over direct", byWrk);
      const loopAdded = latencyTable("the same, read by a client loop of our own (scripts/bench/loop-client.ts; every request's time kept)", byLoop);
      for (const row of results.filter((x) => x.shape === shape.name)) {
        Object.assign(row, { p50Added: wrkAdded.get(row.target)?.p50, p99Added: wrkAdded.get(row.target)?.p99, loopP99Added: loopAdded.get(row.target)?.p99 });
      }
      console.log("");
    }
    if (check) await checkBudgets();
    // the bare hop's too: what the runtime alone takes under the same load
    for (const t of all) {
      if (t.pid === undefined) continue;
      const peak = await peakRss(t, () => wrk(t, SHAPES[0], 100, duration));
      console.log(`RSS of ${t.name} under 100 connections: peak ${(peak.rss / 1024).toFixed(1)} MB (anonymous ${(peak.anon / 1024).toFixed(1)} MB, file pages ${(peak.file / 1024).toFixed(1)} MB)`);
    }
  },
  async () => {
    for (const p of procs) p.kill(cpuProf ? "SIGTERM" : "SIGKILL"); // SIGTERM lets the profiler write
    if (cpuProf) await Promise.race([Promise.all(procs.map((p) => p.exited)), Bun.sleep(30_000)]); // a loaded machine drains slowly
    for (const p of procs) p.kill("SIGKILL");
    await Promise.all(procs.map((p) => p.exited));
    await auth?.stop();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
    pgPinned?.restore();
    if (pgUrl && schema) {
      const sql = new SQL(pgUrl);
      await sql.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).finally(() => sql.close());
    }
  },
  (duration * 2 * rounds * 8 + 300) * 1000,
);

// internal

/**
 * PostgreSQL's server on the rest's CPU for the run: the database is not the proxy under test, and on a 2-CPU machine
 * an unpinned backend answering the gateway's audit batches and budget leases runs on the proxy's CPU now and then,
 * taking its time (in production the database is another machine's). The postmaster and every process it has forked
 * are pinned (backends it forks later inherit it); restore() gives each the CPUs it had.
 */
async function pinPostgres(url: string): Promise<{ restore(): void }> {
  const sql = new SQL(url);
  const rows = (await sql`SELECT pg_backend_pid() AS pid`.finally(() => sql.close())) as { pid: number }[];
  const pid = rows[0]?.pid ?? -1;
  const parentOf = (p: number) => {
    try {
      // /proc/PID/stat: "pid (comm) state ppid …" — comm may hold spaces, so read after its closing parenthesis
      const stat = readFileSync(`/proc/${p}/stat`, "utf8");
      return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
    } catch {
      return -1;
    }
  };
  const postmaster = parentOf(pid);
  if (!(postmaster > 1)) return { restore() {} };
  // the postmaster and the processes it has forked by now
  const family = () => [postmaster, ...readdirSync("/proc").filter((d) => /^\d+$/.test(d)).map(Number).filter((p) => parentOf(p) === postmaster)];
  const before = new Map<number, string>();
  for (const p of family()) {
    const out = Bun.spawnSync(["taskset", "-pc", String(p)], { stdout: "pipe", stderr: "ignore" });
    const list = /list: (\S+)/.exec(out.stdout.toString())?.[1];
    if (out.exitCode !== 0 || list === undefined) continue;
    if (Bun.spawnSync(["taskset", "-a", "-pc", REST_CPU, String(p)], { stdout: "ignore", stderr: "ignore" }).exitCode === 0) before.set(p, list);
  }
  console.log(`PostgreSQL's server (${before.size} processes) pinned to CPU ${REST_CPU} for the run`);
  return {
    restore() {
      // the postmaster's children forked since inherited the pin: they get the postmaster's CPUs back too
      for (const p of family()) {
        const list = before.get(p) ?? before.get(postmaster);
        if (list !== undefined) Bun.spawnSync(["taskset", "-a", "-pc", list, String(p)], { stdout: "ignore", stderr: "ignore" });
      }
    },
  };
}

/**
 * --ab: `groups[0]` (this build's processes) against each other group (a --compare binary's), `rounds` rounds of
 * `duration` s per shape; a round measures every process once, order alternating; its ratio is the mean req/s of A's
 * processes over the other's (and their CPU µs per request the other way round).
 */
async function abRounds(groups: Target[][]): Promise<void> {
  const all = groups.flat();
  console.log(`wrk --ab: ${rounds} rounds of ${duration} s, 64 connections, 1 thread; ${instances} process(es) per build, each measured once a round (order alternating); proxies pinned to CPU ${LOAD_CPU}, wrk and the upstream to CPU ${REST_CPU}`);
  console.log(`A: ${bin}`);
  for (const [i, other] of compare.entries()) console.log(`B${compare.length > 1 ? i + 1 : ""}: ${other}`);
  console.log("");
  const mean = (xs: number[]) => xs.reduce((x, y) => x + y, 0) / xs.length;
  for (const shape of SHAPES) {
    const seen = new Map<string, { rps: number; cpuUs: number; threads: Map<string, number> }[]>(all.map((t) => [t.name, []]));
    for (const t of all) await wrk(t, shape, 64, WARM_UP_S); // not counted: each process's first seconds of a shape are its JIT's
    for (let r = 0; r < rounds; r++) {
      for (const t of r % 2 === 0 ? all : [...all].reverse()) {
        const w = await wrk(t, shape, 64, duration);
        seen.get(t.name)!.push({ rps: w.rps, cpuUs: w.cpuUs!, threads: w.threadUs! });
      }
    }
    /** Per round: the mean over a group's processes. */
    const perRound = (g: Target[], pick: (x: { rps: number; cpuUs: number }) => number) =>
      Array.from({ length: rounds }, (_, r) => mean(g.map((t) => pick(seen.get(t.name)![r]!))));
    console.log(`── ${shape.name}: per round, mean req/s and CPU µs per request of each build's processes`);
    const [a, ...others] = groups as [Target[], ...Target[][]];
    const aRps = perRound(a, (x) => x.rps);
    const aCpu = perRound(a, (x) => x.cpuUs);
    for (const b of others) {
      const bRps = perRound(b, (x) => x.rps);
      const bCpu = perRound(b, (x) => x.cpuUs);
      const ratios = aRps.map((x, r) => x / bRps[r]!);
      const cpuRatios = aCpu.map((x, r) => bCpu[r]! / x);
      for (let r = 0; r < rounds; r++) {
        console.log(`  round ${String(r + 1).padStart(2)}: A ${Math.round(aRps[r]!).toLocaleString("en").padStart(6)} req/s ${aCpu[r]!.toFixed(1).padStart(6)} µs   B ${Math.round(bRps[r]!).toLocaleString("en").padStart(6)} req/s ${bCpu[r]!.toFixed(1).padStart(6)} µs   A/B ${ratios[r]!.toFixed(3)}×`);
      }
      const sorted = [...ratios].sort((x, y) => x - y);
      console.log(`  A ÷ B throughput, median of the rounds' ratios: ${median(ratios).toFixed(3)}× (rounds: ${sorted[0]!.toFixed(2)}–${sorted[sorted.length - 1]!.toFixed(2)})`);
      console.log(`  B ÷ A CPU per request, median of the rounds' ratios: ${median(cpuRatios).toFixed(3)}× (A ${median(aCpu).toFixed(1)} µs, B ${median(bCpu).toFixed(1)} µs: medians)`);
    }
    const each = all.map((t) => `${t.name} ${Math.round(median(seen.get(t.name)!.map((x) => x.rps))).toLocaleString("en")}`).join(", ");
    console.log(`   each process's median req/s: ${each}`);
    for (const [gi, g] of groups.entries()) {
      const list = g.flatMap((t) => seen.get(t.name)!);
      const names = [...new Set(list.flatMap((x) => [...x.threads.keys()]))];
      const split = threadSplit(new Map(names.map((n) => [n, median(list.map((x) => x.threads.get(n) ?? 0))])));
      console.log(`   µs per request by thread, ${gi === 0 ? "A" : `B${groups.length > 2 ? gi : ""}`} (medians): ${split}`);
    }
    console.log("");
  }
}

/**
 * --check: each figure beside DESIGN §13's budget — throughput ≥ 0.85× the bare hop (GET and POST, SQLite and, with
 * --postgres, PostgreSQL), added latency ≤ 0.3 ms p50 and ≤ 2 ms p99, and the CLI's cold starts (scripts/bench/cli.ts:
 * status ≤ 2×, --version ≤ 1.3× the bare start). For a quiet machine: it says what was measured, it is no test.
 */
async function checkBudgets(): Promise<void> {
  const lines: [boolean, string][] = [];
  for (const r of results) {
    if (!r.target.startsWith("ath (")) continue;
    const at = `${r.shape}, ${r.target}`;
    lines.push([r.ratio! >= 0.85, `${at}: throughput ${r.ratio!.toFixed(2)}× the bare hop (budget ≥ 0.85×)`]);
    if (r.p50Added !== undefined) lines.push([r.p50Added <= 0.3, `${at}: p50 added ${r.p50Added.toFixed(3)} ms (budget ≤ 0.3 ms)`]);
    if (r.p99Added !== undefined) lines.push([r.p99Added <= 2, `${at}: p99 added ${r.p99Added.toFixed(3)} ms (budget ≤ 2 ms)`]);
    if (r.loopP99Added !== undefined) lines.push([r.loopP99Added <= 2, `${at}: p99 added ${r.loopP99Added.toFixed(3)} ms, read by the client loop (budget ≤ 2 ms)`]);
  }
  const cli = Bun.spawnSync([process.execPath, join(REPO, "scripts/bench/cli.ts"), "--runs", "30", "--bin", bin], { stdout: "pipe", stderr: "pipe" });
  const out = cli.stdout.toString();
  const ratio = (name: string) => Number(new RegExp(`${name.replace(/[-]/g, "\\$&")}\\s+[\\d.]+ ms\\s+([\\d.]+)×`).exec(out)?.[1]);
  const status = ratio("ath status --format json");
  const version = ratio("ath --version");
  lines.push([status <= 2, `ath status --format json: ${status.toFixed(2)}× the bare start (budget ≤ 2×)`]);
  lines.push([version <= 1.3, `ath --version: ${version.toFixed(2)}× the bare start (budget ≤ 1.3×)`]);
  const load = readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).join(" ");
  console.log(`── --check against DESIGN §13 (load average ${load}; figures mean something on a quiet machine only)`);
  for (const [ok, text] of lines) console.log(`  ${ok ? "ok  " : "MISS"} ${text}`);
  console.log("");
}

/** CPU time (user + system, all threads) a process has used so far, in µs, from /proc/PID/stat. */
function cpuTimeUs(pid: number): number {
  return ticksOf(readFileSync(`/proc/${pid}/stat`, "utf8"));
}

/** CPU time so far per thread name (/proc/PID/task/TID: the JS thread, Bun's HTTP client thread, GC helpers…), in µs. */
function threadTimesUs(pid: number): Map<string, number> {
  const out = new Map<string, number>();
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      try {
        const name = tid === String(pid) ? "main (JS)" : readFileSync(`/proc/${pid}/task/${tid}/comm`, "utf8").trim().replace(/\d+$/, "");
        out.set(name, (out.get(name) ?? 0) + ticksOf(readFileSync(`/proc/${pid}/task/${tid}/stat`, "utf8")));
      } catch {
        // the thread ended between the listing and the read
      }
    }
  } catch {
    // the process ended
  }
  return out;
}

function ticksOf(stat: string): number {
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const ticks = Number(fields[11]) + Number(fields[12]); // utime, stime (fields 14 and 15 of proc(5))
  return (ticks / CLOCK_TICKS) * 1e6;
}

/** Per-thread µs per request between two readings. */
function perThread(before: Map<string, number>, after: Map<string, number>, requests: number): Map<string, number> {
  return new Map([...after].map(([name, us]) => [name, (us - (before.get(name) ?? 0)) / requests] as const));
}

/** µs per request by thread, largest first and from 0.5 µs, e.g. "main (JS) 120.1, HTTP Client 30.2". */
function threadSplit(us: Map<string, number>): string {
  return [...us]
    .filter(([, x]) => x >= 0.5)
    .sort((a, b) => b[1] - a[1])
    .map(([name, x]) => `${name} ${x.toFixed(1)}`)
    .join(", ");
}

async function wrk(t: Target, shape: Shape, connections: number, seconds: number): Promise<{ rps: number; p50: number; p99: number; p999: number; cpuUs: number | null; threads?: string; threadUs?: Map<string, number> }> {
  const cpuBefore = t.pid === undefined ? null : cpuTimeUs(t.pid);
  const threadsBefore = t.pid === undefined ? null : threadTimesUs(t.pid);
  const script = join(tmpdir(), `ath-wrk-${process.pid}.lua`);
  writeFileSync(
    script,
    [
      `wrk.method = "${shape.method}"`,
      `wrk.headers["Authorization"] = "Bearer ${t.token}"`,
      shape.method === "POST" ? `wrk.headers["Content-Type"] = "application/json"\nwrk.body = '${POST_BODY}'` : "",
      // a wrong answer must not count as throughput
      `done = function(summary, latency, requests) io.write(string.format("p999 %d\\n", latency:percentile(99.9))) end`,
      `response = function(status) if status ~= ${shape.method === "POST" ? 201 : 200} then io.stderr:write("status " .. status .. "\\n") os.exit(1) end end`,
    ].join("\n"),
  );
  const p = Bun.spawn(["taskset", "-c", REST_CPU, "wrk", "-t1", `-c${connections}`, `-d${seconds}s`, "--latency", "-s", script, t.url + shape.path], { stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]).finally(() => rmSync(script, { force: true }));
  if (code !== 0) throw new Error(`wrk against ${t.name} failed (${code}): ${err}${out}`);
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1]);
  const pct = (p: string) => {
    const m = new RegExp(`\\s${p}%\\s+([\\d.]+)(us|ms|s)`).exec(out);
    if (!m) throw new Error(`no ${p}% in wrk's output:\n${out}`);
    return Number(m[1]) * ({ us: 0.001, ms: 1, s: 1000 } as Record<string, number>)[m[2]!]!;
  };
  const requests = Number(/(\d+) requests in/.exec(out)?.[1]);
  const cpuUs = cpuBefore === null || !(requests > 0) ? null : (cpuTimeUs(t.pid!) - cpuBefore) / requests;
  const threadUs = threadsBefore === null || !(requests > 0) ? undefined : perThread(threadsBefore, threadTimesUs(t.pid!), requests);
  const threads = threadUs && threadSplit(threadUs);
  const p999 = Number(/p999 (\d+)/.exec(out)?.[1]) / 1000;
  return { rps, p50: pct("50"), p99: pct("99"), p999, cpuUs, ...(threadUs ? { threads, threadUs } : {}) };
}

/** One round's latency at one connection, in ms (n: requests, where the instrument says). */
interface Latency {
  p50: number;
  p99: number;
  p999: number;
  n?: number;
}

/** Prints one instrument's rounds per target — medians, p50 and p99 added over direct's, p99.9, each round's p99 — and returns what each target added. */
function latencyTable(title: string, rounds: Map<string, Latency[]>): Map<string, { p50: number; p99: number }> {
  const med = (xs: Latency[], pick: (x: Latency) => number) => median(xs.map(pick));
  const direct = rounds.get("direct")!;
  const d50 = med(direct, (x) => x.p50);
  const d99 = med(direct, (x) => x.p99);
  const added = new Map<string, { p50: number; p99: number }>();
  console.log(`   ${title}`);
  for (const [name, xs] of rounds) {
    const p50 = med(xs, (x) => x.p50);
    const p99 = med(xs, (x) => x.p99);
    if (name !== "direct") added.set(name, { p50: p50 - d50, p99: p99 - d99 });
    const plus = name === "direct" ? "" : `   +${(p50 - d50).toFixed(3)} / +${(p99 - d99).toFixed(3)} ms`;
    const n = xs[0]?.n === undefined ? "" : `; ${Math.round(med(xs, (x) => x.n!))} requests a round`;
    console.log(`  ${name.padEnd(44)} ${p50.toFixed(3)} / ${p99.toFixed(3)} ms${plus}   (p99.9 ${med(xs, (x) => x.p999).toFixed(2)}; each round's p99 ${xs.map((x) => x.p99.toFixed(2)).join(" ")}${n})`);
  }
  return added;
}

/** One round of scripts/bench/loop-client.ts against `t`, pinned where wrk runs. */
async function loop(t: Target, shape: Shape, seconds: number): Promise<Latency> {
  const p = Bun.spawn(["taskset", "-c", REST_CPU, process.execPath, join(REPO, "scripts/bench/loop-client.ts"), t.url + shape.path, t.token, shape.method, String(seconds), shape.method === "POST" ? POST_BODY : ""], { stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  if (code !== 0) throw new Error(`the client loop against ${t.name} failed (${code}): ${err}`);
  return JSON.parse(out);
}

async function startBun(name: string, code: string, cpu: string, env: Record<string, string>): Promise<string> {
  // --cpu-prof: the bare hop is profiled too, the same way (its profile's file name carries its pid, printed below)
  const prof = cpuProf && name === "bare hop" ? ["--cpu-prof", "--cpu-prof-md", `--cpu-prof-dir=${cpuProf}`] : [];
  const p = Bun.spawn(["taskset", "-c", cpu, process.execPath, ...prof, "-e", code], { env: { ...process.env, ...env }, stdout: "pipe", stderr: "inherit" });
  if (prof.length) console.log(`${name}: pid ${p.pid}, profiled into ${cpuProf}`);
  procs.push(p);
  pids.set(name, p.pid);
  const port = Number((await firstLine(p.stdout)).trim());
  if (!Number.isInteger(port) || port <= 0) throw new Error(`${name} did not start`);
  return `http://127.0.0.1:${port}`;
}

async function startAth(name: string, binary: string, port: number, upstream: string, extra: string[]): Promise<Target> {
  const dir = mkdtempSync(join(tmpdir(), "ath-wrk-"));
  dirs.push(dir);
  const providers = join(dir, "providers.json");
  writeFileSync(
    providers,
    JSON.stringify({
      fast: {
        display_name: "Fast bench API",
        available_scopes: ["openid", "offline_access", "mail:read", "mail:send"],
        authorize_endpoint: auth!.authorizeEndpoint,
        token_endpoint: auth!.tokenEndpoint,
        api_base_url: upstream,
        client_id: auth!.postClient.client_id,
        client_secret: auth!.postClient.client_secret,
        scope_rules: { "mail:read": ["GET /small"], "mail:send": ["POST /items"] },
      },
    }),
  );
  const baseUrl = `http://127.0.0.1:${port}`;
  const command = binary === "source"
    ? [process.execPath, "--cpu-prof", "--cpu-prof-md", `--cpu-prof-dir=${cpuProf}`, join(REPO, "src/main.ts")]
    : [binary];
  const p = Bun.spawn(
    ["taskset", "-c", LOAD_CPU, ...command, "serve", "--port", String(port), "--base-url", baseUrl, "--providers", providers, "--data-dir", join(dir, "data"), "--admin-token", "bench-admin-token-of-24-characters", "--dev", ...extra],
    // Production-like: JSON access logs (drained), and a proxy rate limit no run reaches — its bucket is still charged
    // per request. Given as variables, which a --compare binary predating them ignores.
    { env: { ...process.env, ATH_HOME: join(dir, "home"), NO_COLOR: "1", ATH_LOG_FORMAT: "json", ATH_RATE_LIMIT_PROXY: "999999999/s" }, stdout: "pipe", stderr: "pipe" },
  );
  procs.push(p);
  if (!(await readyLine(p.stdout)).includes("listening on")) throw new Error(`${name} did not start: ${await new Response(p.stderr).text()}`);
  const issuedBefore = auth!.issuedTokens.length;
  const flow = await fullFlow(baseUrl, { provider_id: "fast", scopes: ["mail:read", "mail:send"] });
  for (const t of auth!.issuedTokens.slice(issuedBefore)) {
    if (t.kind !== "AccessToken") continue;
    await fetch(`${upstream}/__accept`, { method: "POST", body: t.value });
    upstreamTokens.push(t.value);
  }
  return { name, url: `${baseUrl}/ath/proxy/fast`, token: flow.accessToken, pid: p.pid };
}

/** Adds `n` token rows to a running SQLite gateway's store (its own connection; the gateway keeps serving). */
async function addTokens(t: Target, n: number): Promise<void> {
  const dbPath = join(dirs[dirs.length - 1]!, "data", "ath.db");
  const db = new Database(dbPath);
  const agent = db.query<{ client_id: string }, []>("SELECT client_id FROM agents LIMIT 1").get()!;
  const insert = db.prepare(
    "INSERT INTO tokens (token_hash, client_id, agent_id, user_id, provider_id, scopes, grant_id, created_at, expires_at, revoked_at) VALUES (?, ?, 'bench', 'bench', 'fast', '[]', NULL, ?, ?, NULL)",
  );
  const now = Date.now();
  db.transaction(() => {
    for (let i = 0; i < n; i++) insert.run(new Bun.CryptoHasher("sha256").update(`bench-${i}`).digest("hex"), agent.client_id, now, now + 3_600_000);
  })();
  db.close();
  void t;
}

/**
 * The peak of VmRSS while `during` runs, in kB, with its parts at that moment: anonymous memory (heaps, buffers) and
 * file pages (mostly the executable's code as mapped: clean, shared with every process of the same file, given back
 * under memory pressure without a write) — /proc/PID/status.
 */
async function peakRss(t: Target, during: () => Promise<unknown>): Promise<{ rss: number; anon: number; file: number }> {
  let peak = { rss: 0, anon: 0, file: 0 };
  let running = true;
  const kb = (status: string, field: string) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? 0);
  const sample = (async () => {
    while (running) {
      const status = readFileSync(`/proc/${t.pid}/status`, "utf8");
      const rss = kb(status, "VmRSS");
      if (rss > peak.rss) peak = { rss, anon: kb(status, "RssAnon"), file: kb(status, "RssFile") };
      await Bun.sleep(50);
    }
  })();
  await during();
  running = false;
  await sample;
  return peak;
}

/**
 * Reads until the start-up line (`listening on …`, text or JSON), then keeps reading what the gateway logs and drops
 * it, as a log collector would: an undrained pipe would stall the gateway once full.
 */
async function readyLine(stream: ReadableStream<Uint8Array>): Promise<string> {
  const reader = stream.getReader();
  let text = "";
  let found: string | undefined;
  while (found === undefined) {
    const { value, done } = await reader.read();
    if (done) break;
    text += new TextDecoder().decode(value);
    found = text.split("\n").find((l) => l.includes("listening on "));
  }
  void (async () => {
    while (!(await reader.read()).done);
  })().catch(() => undefined);
  return found ?? "";
}

async function firstLine(stream: ReadableStream<Uint8Array>): Promise<string> {
  const reader = stream.getReader();
  let text = "";
  while (!text.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) break;
    text += new TextDecoder().decode(value);
  }
  reader.releaseLock();
  return text.split("\n")[0] ?? "";
}
