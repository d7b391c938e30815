/**
 * Overhead of the gateway's proxy: the same requests sent straight to a fast upstream API and through
 * `ath serve` (GET /ath/proxy/fast/<path> with an ATH token), measured in the same run, interleaved, and printed as
 * absolute numbers and ratios against the direct baseline — sequential latency (median, p95) and throughput with
 * N concurrent clients, for a small JSON body, a 64 KiB body and a 1 KiB JSON POST.
 *
 * The world is the e2e harness (tests/helpers): a real oidc-provider, a real `ath serve` process and the full
 * register → authorize → consent → token flow. The upstream is this file's own Bun.serve API: the harness's sample
 * API introspects every token at oidc-provider, which would dominate the timing. Ours accepts only the upstream
 * access token oidc-provider issued for the flow (constant-time comparison) — never the ATH token. A second
 * reference, a bare pass-through proxy in its own Bun process (no checks, no store), separates the cost of the
 * extra HTTP hop itself from ath's own work.
 *
 * Usage: bun scripts/bench/proxy.ts [--requests 2000] [--concurrency 16] [--budget 20] [--binary]
 *          [--postgres [postgres://postgres@127.0.0.1:5432/test]] [--cpu-prof DIR]
 * --budget: seconds of measuring per data store (each measure stops at its share of it, or after --requests).
 * --postgres: also run a gateway on PostgreSQL, in a fresh schema dropped afterwards.
 * --cpu-prof: the gateway (source mode) writes a CPU profile (.cpuprofile and .md) into DIR when it stops.
 */
import { SQL } from "bun";
import { timingSafeEqual } from "node:crypto";
import { availableParallelism } from "node:os";
import { join, resolve } from "node:path";
import { fullFlow } from "../../tests/helpers/agent.ts";
import { startWorld, type World } from "../../tests/helpers/world.ts";
import { concurrent, median, ms, percentile, sequential, versus, withCleanup, type Probe, type Throughput } from "./lib.ts";

const REPO = resolve(import.meta.dir, "../..");
const DEFAULT_PG = "postgres://postgres@127.0.0.1:5432/test";
const args = process.argv.slice(2);
const flag = (name: string, fallback: string) => {
  const i = args.indexOf(name);
  const v = args[i + 1];
  return i >= 0 && v !== undefined && !v.startsWith("--") ? v : fallback;
};
const requests = Math.min(50_000, Math.max(100, Number(flag("--requests", "2000"))));
const clients = Math.min(256, Math.max(1, Number(flag("--concurrency", "16"))));
const budgetMs = Math.min(300, Math.max(2, Number(flag("--budget", "20")))) * 1000;
const binary = args.includes("--binary");
const pgUrl = args.includes("--postgres") ? flag("--postgres", DEFAULT_PG) : undefined;
const cpuProf = args.includes("--cpu-prof") ? resolve(flag("--cpu-prof", "bench-profiles")) : undefined;
if (binary && !(await Bun.file(join(REPO, "dist/ath")).exists())) {
  console.error("dist/ath not found: build it first with `npx bun run build`, or drop --binary");
  process.exit(1);
}
if (binary && cpuProf) {
  console.error("--cpu-prof profiles the source gateway (bun src/main.ts serve): drop --binary");
  process.exit(1);
}

/** A small JSON answer, a 64 KiB one, and a 1 KiB JSON request body. */
const SMALL = JSON.stringify({ id: "msg_1", subject: "Quarterly numbers", unread: true, labels: ["inbox"] });
const LARGE = padJson(64 * 1024);
const POST_BODY = padJson(1024);

interface Shape {
  name: string;
  method: "GET" | "POST";
  path: string;
  status: number;
  bytes: number;
}
const SHAPES: Shape[] = [
  { name: `GET small JSON (${SMALL.length} B)`, method: "GET", path: "/small", status: 200, bytes: SMALL.length },
  { name: "GET 64 KiB body", method: "GET", path: "/large", status: 200, bytes: LARGE.length },
  { name: "POST 1 KiB JSON", method: "POST", path: "/items", status: 201, bytes: `{"received":${POST_BODY.length}}`.length },
];

const fast = startFastApi();
const bare = await startBareProxy(fast.baseUrl);
const worlds: World[] = [];
let schema: string | undefined;

await withCleanup(
  async () => {
    console.log(`ath proxy overhead: ≤ ${requests} requests per measure, ${clients} concurrent clients for throughput, ≤ ${budgetMs / 1000} s per store`);
    console.log(`bun ${Bun.version}, ${availableParallelism()} CPUs; gateway: ${binary ? "dist/ath serve" : "bun src/main.ts serve"}; upstream: Bun.serve in the benchmark process\n`);
    await benchStore("SQLite (default, file in a temp data dir)", []);
    if (pgUrl !== undefined) {
      schema = `bench_${Buffer.from(crypto.getRandomValues(new Uint8Array(6))).toString("hex")}`;
      const db = new URL(pgUrl);
      db.searchParams.set("schema", schema);
      await benchStore(`PostgreSQL (${db.host}, schema ${schema})`, ["--db", db.href]);
    }
    if (cpuProf) console.log(`CPU profiles of the gateway: ${cpuProf}`);
  },
  async () => {
    for (const w of worlds.splice(0)) {
      await w.gw.stop("SIGTERM"); // graceful: lets --cpu-prof write its profile
      await w.stop();
    }
    bare.kill("SIGKILL");
    await bare.exited;
    await fast.stop();
    if (pgUrl !== undefined && schema !== undefined) {
      const sql = new SQL(pgUrl);
      try {
        await sql.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      } finally {
        await sql.close();
      }
    }
  },
  budgetMs * 2 + 120_000,
);

async function benchStore(label: string, extraArgs: string[]): Promise<void> {
  if (cpuProf) process.env.BUN_OPTIONS = `--cpu-prof --cpu-prof-md --cpu-prof-dir=${cpuProf}`;
  const world = await startWorld({
    binary,
    extraArgs,
    providers: (auth) => ({
      fast: {
        display_name: "Fast bench API",
        available_scopes: ["openid", "offline_access", "mail:read", "mail:send"],
        authorize_endpoint: auth.authorizeEndpoint,
        token_endpoint: auth.tokenEndpoint,
        api_base_url: fast.baseUrl,
        client_id: auth.postClient.client_id,
        client_secret: auth.postClient.client_secret,
        token_endpoint_auth_method: "client_secret_post",
        scope_rules: { "mail:read": ["GET /small", "GET /large"], "mail:send": ["POST /items"] },
      },
    }),
  });
  delete process.env.BUN_OPTIONS;
  worlds.push(world);
  const issuedBefore = world.auth.issuedTokens.length;
  const flow = await fullFlow(world.baseUrl, { provider_id: "fast", scopes: ["mail:read", "mail:send"] });
  const upstream = world.auth.issuedTokens.slice(issuedBefore).find((t) => t.kind === "AccessToken")?.value;
  if (upstream === undefined) throw new Error("the flow issued no upstream access token");
  fast.accept(upstream);

  const direct = (s: Shape) => probe(`${fast.baseUrl}${s.path}`, upstream, s);
  const hop = (s: Shape) => probe(`${bare.url}${s.path}`, upstream, s);
  const proxied = (s: Shape) => probe(`${world.baseUrl}/ath/proxy/fast${s.path}`, flow.accessToken, s);
  // The upstream refuses the ATH token: what it accepts through the gateway is the swapped-in upstream token.
  const refused = await fetch(`${fast.baseUrl}/small`, { headers: { authorization: `Bearer ${flow.accessToken}` } });
  if (refused.status !== 401) throw new Error(`the fast API accepted the ATH token (${refused.status})`);
  const seenBefore = { ...fast.seen };

  for (const s of SHAPES) {
    const deadline = performance.now() + 5_000;
    await sequential([direct(s), hop(s), proxied(s)], 200, deadline);
    for (const p of [direct(s), hop(s), proxied(s)]) await concurrent(p, clients * 20, clients, deadline);
  }

  console.log(`── ${label}`);
  const share = budgetMs / (SHAPES.length * 3);
  for (const s of SHAPES) {
    const [d, b, p] = await sequential([direct(s), hop(s), proxied(s)], requests, performance.now() + share);
    const [td, tb, tp] = await abcCba([direct(s), hop(s), proxied(s)], share * 2);
    console.log(`${s.name}: ${d!.samples.length} sequential requests each, then ${td!.requests}/${tb!.requests}/${tp!.requests} over ${clients} clients`);
    console.log(`  ${"".padEnd(16)} ${"direct".padStart(12)}   ${"bare hop (Bun pass-through)".padEnd(44)}   ath proxy`);
    for (const [what, f, rate] of [
      ["latency median", (x: number[]) => median(x), false],
      ["latency p95", (x: number[]) => percentile(x, 95), false],
    ] as const) {
      const [vd, vb, vp] = [f(d!.samples), f(b!.samples), f(p!.samples)];
      line(what, vd, vb, vp, rate);
    }
    line(`throughput ×${clients}`, td!.perSecond, tb!.perSecond, tp!.perSecond, true);
  }
  if (fast.seen.refused !== seenBefore.refused) throw new Error("the upstream refused requests during the run");
  const accepted = fast.seen.accepted - seenBefore.accepted;
  console.log(`upstream check: all ${accepted} requests carried the upstream token; the ATH token sent to it directly got 401\n`);
}

/** Throughput in A-B-C-C-B-A halves, so drift over the run hits every probe alike. */
async function abcCba(probes: Probe[], budget: number): Promise<Throughput[]> {
  const half = Math.ceil(requests / 2);
  const slot = budget / (probes.length * 2);
  const runs = new Map<Probe, Throughput[]>(probes.map((p) => [p, []]));
  for (const p of [...probes, ...[...probes].reverse()]) runs.get(p)!.push(await concurrent(p, half, clients, performance.now() + slot));
  return probes.map((p) => {
    const [x, y] = runs.get(p)! as [Throughput, Throughput];
    const total = { requests: x.requests + y.requests, ms: x.ms + y.ms };
    return { ...total, perSecond: (total.requests / total.ms) * 1000 };
  });
}

function line(what: string, direct: number, hop: number, ath: number, rate: boolean): void {
  const fmt = (x: number) => (rate ? `${Math.round(x).toLocaleString("en")} req/s` : ms(x));
  const unit = rate ? "req/s" : "ms";
  const hopCell = `${fmt(hop)} (${versus(hop, direct, unit)})`;
  console.log(`  ${what.padEnd(16)} ${fmt(direct).padStart(12)}   ${hopCell.padEnd(44)}   ${fmt(ath)} (${versus(ath, direct, unit)}; ${versus(ath, hop, unit, "bare hop")})`);
}

function probe(url: string, token: string, s: Shape): Probe {
  const headers: Record<string, string> = { authorization: `Bearer ${token}` };
  if (s.method === "POST") headers["content-type"] = "application/json";
  return async () => {
    const res = await fetch(url, { method: s.method, headers, body: s.method === "POST" ? POST_BODY : undefined });
    const body = await res.arrayBuffer();
    if (res.status !== s.status || body.byteLength !== s.bytes) {
      throw new Error(`${s.method} ${url}: ${res.status}, ${body.byteLength} bytes: ${new TextDecoder().decode(body.slice(0, 300))}`);
    }
  };
}

/**
 * The reference hop: a Bun process that forwards every request to `upstream` as is (bodies of POSTs buffered, as
 * ath buffers replayable ones; no decompression) — what any proxy in Bun costs before doing any work of its own.
 */
async function startBareProxy(upstream: string) {
  const code = `const up = process.env.UPSTREAM;
const s = Bun.serve({ hostname: "127.0.0.1", port: 0, async fetch(req) {
  const u = new URL(req.url);
  const body = req.method === "GET" || req.method === "HEAD" ? undefined : await req.arrayBuffer();
  const res = await fetch(up + u.pathname + u.search, { method: req.method, headers: req.headers, body, redirect: "manual", decompress: false });
  return new Response(res.body, { status: res.status, headers: res.headers });
} });
console.log(s.port);`;
  const proc = Bun.spawn([process.execPath, "-e", code], { env: { ...process.env, UPSTREAM: upstream }, stdin: "ignore", stdout: "pipe", stderr: "inherit" });
  const reader = proc.stdout.getReader();
  const first = await Promise.race([reader.read(), Bun.sleep(10_000).then(() => undefined)]);
  const port = Number(new TextDecoder().decode(first?.value ?? new Uint8Array()).trim());
  if (!Number.isInteger(port) || port <= 0) {
    proc.kill("SIGKILL");
    throw new Error("the bare pass-through proxy did not start");
  }
  reader.releaseLock();
  return { url: `http://127.0.0.1:${port}`, kill: (signal: NodeJS.Signals) => proc.kill(signal), exited: proc.exited };
}

/** The upstream API: a bearer check against the accepted tokens, then a fixed answer per route. */
function startFastApi() {
  const accepted: Buffer[] = [];
  const seen = { accepted: 0, refused: 0 };
  const large = new TextEncoder().encode(LARGE);
  const json = { "content-type": "application/json" };
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      const bearer = Buffer.from(/^Bearer (\S+)$/.exec(req.headers.get("authorization") ?? "")?.[1] ?? "");
      if (!accepted.some((t) => t.length === bearer.length && timingSafeEqual(t, bearer))) {
        seen.refused++;
        return Response.json({ error: "invalid_token" }, { status: 401, headers: { "www-authenticate": 'Bearer error="invalid_token"' } });
      }
      seen.accepted++;
      const route = `${req.method} ${new URL(req.url).pathname}`;
      if (route === "GET /small") return new Response(SMALL, { headers: json });
      if (route === "GET /large") return new Response(large, { headers: json });
      if (route === "POST /items") return Response.json({ received: (await req.arrayBuffer()).byteLength }, { status: 201 });
      return Response.json({ error: "not_found" }, { status: 404 });
    },
  });
  return {
    baseUrl: `http://127.0.0.1:${server.port}`,
    seen,
    accept: (token: string) => void accepted.push(Buffer.from(token)),
    stop: () => server.stop(true),
  };
}

/** A JSON object of exactly `bytes` bytes. */
function padJson(bytes: number): string {
  const shell = JSON.stringify({ data: "" });
  return JSON.stringify({ data: "x".repeat(bytes - shell.length) });
}
