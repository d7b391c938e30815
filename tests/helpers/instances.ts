/**
 * Several `ath serve` instances (the built binary) on one PostgreSQL database, behind a TCP forwarder that plays a
 * database going away (tcp-forwarder.ts), in front of the sample API that counts what it received — and the
 * scenarios of DESIGN §24, each returning what it measured. Shared by tests/e2e/instances-faults.test.ts (the bounds
 * asserted at a scale that fits 2 CPUs) and scripts/instances.ts (the published figures). No bun:test in here.
 */
import { SQL } from "bun";
import { verifyAuditExport } from "../../src/agent/audit-verify.ts";
import { fullFlow } from "./agent.ts";
import { startGateway, type Gateway } from "./gateway.ts";
import { freePort } from "./net.ts";
import { PG_URL } from "./store-harness.ts";
import { startForwarder, type ForwarderFault, type TcpForwarder } from "./tcp-forwarder.ts";
import { startUpstreamApi, type UpstreamApi } from "./upstream-api.ts";
import { startUpstreamAuth, type UpstreamAuth } from "./upstream-auth.ts";
import { mailProvider } from "./world.ts";

export interface Fleet {
  auth: UpstreamAuth;
  api: UpstreamApi;
  fwd: TcpForwarder;
  gws: Gateway[];
  schema: string;
  /** The budget of GET /v1/echo per agent (exact-budget scenario). */
  limit: number;
  stop(): Promise<void>;
}

export interface FleetOptions {
  instances?: number;
  /** GET /v1/echo's budget per agent. */
  limit?: number;
  /** The store's deadline (`timeout_ms`). */
  timeoutMs?: number;
  /** Each instance's pool (`pool`): three instances share max_connections with everyone else. */
  pool?: number;
  log?: (line: string) => void;
}

/** A budget on GET /v1/messages no scenario reaches: it only counts, so counts can be compared with forwarded calls. */
export const COUNTING_LIMIT = 1_000_000;

export async function startFleet(o: FleetOptions = {}): Promise<Fleet> {
  const n = o.instances ?? 3;
  const limit = o.limit ?? 100;
  const schema = `ath_inst_${Buffer.from(crypto.getRandomValues(new Uint8Array(6))).toString("hex")}`;
  const pg = new URL(PG_URL);
  const fwd = await startForwarder({ host: pg.hostname, port: Number(pg.port || 5432) });
  const ports = await Promise.all(Array.from({ length: n }, () => freePort()));
  const auth = await startUpstreamAuth({ redirectUris: ports.map((p) => `http://127.0.0.1:${p}/ath/callback`) });
  const api = await startUpstreamApi(auth);
  const db = new URL(PG_URL);
  db.port = String(fwd.port);
  db.searchParams.set("schema", schema);
  db.searchParams.set("timeout_ms", String(o.timeoutMs ?? 800));
  db.searchParams.set("pool", String(o.pool ?? 6));
  const env = { ATH_MASTER_KEY: Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("hex") };
  const providers = {
    mail: mailProvider(auth, api, {
      budgets: [
        { match: ["GET /v1/echo"], per: "agent", limit, window: "30d", then: "deny" },
        { match: ["GET /v1/messages"], per: "agent", limit: COUNTING_LIMIT, window: "30d", then: "deny" },
        { match: ["POST /v1/echo"], per: "agent", limit: 1, window: "30d", then: "approve", approver: "admin" },
      ],
    }),
  };
  const gws: Gateway[] = [];
  try {
    // one at a time: the first migrates, the others find the schema ready
    for (const port of ports) gws.push(await startGateway({ providers, env, port, binary: true, extraArgs: ["--db", db.href] }));
  } catch (err) {
    for (const g of gws) await g.cleanup();
    await Promise.all([api.stop(), auth.stop(), fwd.close()]);
    throw err;
  }
  return {
    auth, api, fwd, gws, schema, limit,
    async stop() {
      for (const g of gws) await g.cleanup();
      await api.stop();
      await auth.stop();
      await fwd.close();
      const sql = new SQL(PG_URL);
      try {
        await sql.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      } finally {
        await sql.close();
      }
    },
  };
}

const admin = (g: Gateway) => ({ "x-ath-user-token": g.adminToken, "content-type": "application/json" });

/** A fresh agent with a token for mail (each scenario has its own: its counts and audit records are its own). */
export async function grantee(f: Fleet, via = f.gws[0]!) {
  const flow = await fullFlow(via.baseUrl, { provider_id: "mail", scopes: ["mail:read", "mail:send"] });
  return { token: flow.accessToken, client: flow.client, clientId: flow.client.client_id };
}

function proxied(g: Gateway, token: string, path: string, init: RequestInit = {}): Promise<Response> {
  return fetch(`${g.baseUrl}/ath/proxy/mail${path}`, { ...init, headers: { authorization: `Bearer ${token}`, ...(init.headers as Record<string, string> | undefined) } });
}

/** Runs `worker` on `concurrency` loops until `calls` were made; each gets its call's index. */
async function pool(calls: number, concurrency: number, worker: (i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < calls) await worker(next++);
  }));
}

export function percentile(values: number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

/** The budget's count, read at the first instance (asked again while it answers 503, for at most 10 s). */
async function budgetUsed(f: Fleet, clientId: string, rule: string): Promise<number> {
  const g = f.gws[0]!;
  for (const until = performance.now() + 10_000; ; await Bun.sleep(100)) {
    const res = await fetch(`${g.baseUrl}/ath/admin/budgets?client_id=${clientId}`, { headers: admin(g) });
    if (res.status === 200) {
      const r = (await res.json()) as { budgets: { used: number; rule: string }[] };
      return r.budgets.find((b) => b.rule.includes(rule))?.used ?? 0;
    }
    if (performance.now() > until) throw new Error(`GET /ath/admin/budgets answered ${res.status}: ${await res.text()}`);
    await res.body?.cancel();
  }
}

// ——— exact budgets ———

export interface BudgetResult { calls: number; limit: number; forwarded: number; ok: number; refused: number; other: number; otherStatuses: Record<number, number>; ms: number }

/** `calls` concurrent calls over every instance against the budget: how many the upstream received. */
export async function exactBudget(f: Fleet, o: { calls: number; concurrency: number }): Promise<BudgetResult> {
  const { token } = await grantee(f);
  const before = f.api.requests.filter((r) => r.path === "/v1/echo" && r.method === "GET").length;
  let ok = 0, refused = 0, other = 0;
  const otherStatuses: Record<number, number> = {};
  const t0 = performance.now();
  await pool(o.calls, o.concurrency, async (i) => {
    const res = await proxied(f.gws[i % f.gws.length]!, token, "/v1/echo");
    await res.body?.cancel();
    if (res.status === 200) ok++;
    else if (res.status === 429) refused++;
    else {
      other++;
      otherStatuses[res.status] = (otherStatuses[res.status] ?? 0) + 1;
    }
  });
  const forwarded = f.api.requests.filter((r) => r.path === "/v1/echo" && r.method === "GET").length - before;
  return { calls: o.calls, limit: f.limit, forwarded, ok, refused, other, otherStatuses, ms: performance.now() - t0 };
}

// ——— parked calls (then: approve) ———

export interface ParkedResult { parked: number; forwarded: number; approvedTwice: number }

/**
 * `n` calls past the budget, each held for a person; each approval is decided at two instances at once and the call
 * sent again with it at every instance at once: the upstream must receive each exactly once.
 */
export async function parkedApprovals(f: Fleet, n: number): Promise<ParkedResult> {
  const { token } = await grantee(f);
  const posts = () => f.api.requests.filter((r) => r.path === "/v1/echo" && r.method === "POST").length;
  const send = (g: Gateway, approval?: string) =>
    proxied(g, token, "/v1/echo", { method: "POST", headers: { "content-type": "application/json", ...(approval ? { "x-ath-approval": approval } : {}) }, body: '{"n":1}' });
  const first = await send(f.gws[0]!);
  await first.body?.cancel();
  const before = posts();
  let approvedTwice = 0;
  for (let i = 0; i < n; i++) {
    const held = await send(f.gws[i % f.gws.length]!);
    if (held.status !== 403) throw new Error(`a call past the budget was not held: ${held.status} ${await held.text()}`);
    const { details } = (await held.json()) as { details: { approval_id: string } };
    const decisions = await Promise.all(f.gws.slice(0, 2).map((g) =>
      fetch(`${g.baseUrl}/ath/admin/approvals/${details.approval_id}`, { method: "POST", headers: admin(g), body: JSON.stringify({ decision: "approve" }) }).then((r) => r.status)));
    if (decisions.filter((s) => s === 200).length === 2) approvedTwice++;
    const sent = await Promise.all(f.gws.map((g) => send(g, details.approval_id).then(async (r) => (await r.body?.cancel(), r.status))));
    if (!sent.includes(200)) throw new Error(`an approved call was sent by no instance: ${sent.join(", ")}`);
  }
  return { parked: n, forwarded: posts() - before, approvedTwice };
}

// ——— revocation everywhere ———

export interface RevocationResult { races: number; p50: number; p99: number; max: number; forwardedAfterBound: number; boundMs: number }

/**
 * `races` tokens, each warm at every other instance, revoked at the first: how long until each other instance refuses
 * it (ms after the revocation answered). With `killListeners`, every instance's LISTEN connection is terminated
 * (pg_terminate_backend) just before each revocation.
 */
export async function revocationRaces(f: Fleet, o: { races: number; killListeners: boolean; boundMs: number; concurrency?: number }): Promise<RevocationResult> {
  const [a, ...others] = f.gws as [Gateway, ...Gateway[]];
  const tokens: Awaited<ReturnType<typeof grantee>>[] = [];
  await pool(o.races, o.concurrency ?? 4, async () => void tokens.push(await grantee(f)));
  const times: number[] = [];
  let forwardedAfterBound = 0;
  const direct = o.killListeners ? new SQL(PG_URL, { max: 1 }) : undefined;
  try {
    for (const t of tokens) {
      for (const g of others) {
        const warm = await proxied(g, t.token, "/v1/messages");
        await warm.body?.cancel();
        if (warm.status !== 200) throw new Error(`warm-up call answered ${warm.status}`);
      }
      if (direct) {
        const ports = f.fwd.targetPorts();
        await direct.unsafe(
          "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'ath-changes' AND client_port = ANY($1::int[])",
          [ports],
        );
      }
      const r = await fetch(`${a.baseUrl}/ath/revoke`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: new URLSearchParams({ token: t.token, ...t.client }).toString() });
      if (r.status !== 200) throw new Error(`revoke answered ${r.status}: ${await r.text()}`);
      const at = performance.now();
      const seen = await Promise.all(others.map(async (g) => {
        for (;;) {
          const before = f.api.requests.length;
          const res = await proxied(g, t.token, "/v1/messages");
          await res.body?.cancel();
          const elapsed = performance.now() - at;
          if (res.status !== 200) return elapsed;
          if (elapsed > o.boundMs) forwardedAfterBound += f.api.requests.length > before ? 1 : 0;
          if (elapsed > 10_000) return elapsed;
        }
      }));
      times.push(...seen);
    }
  } finally {
    await direct?.close();
  }
  return { races: tokens.length, p50: percentile(times, 50), p99: percentile(times, 99), max: Math.max(...times), forwardedAfterBound, boundMs: o.boundMs };
}

// ——— PostgreSQL refused, reset, stalled ———

export interface OutageResult {
  fault: ForwarderFault;
  outageMs: number;
  /**
   * Writes begun during the fault: how many; how many answered 503 with Retry-After (and the slowest of those); how
   * many answered success while the store was away (must be none); how many succeeded once it was back.
   */
  writes: number;
  writes503: number;
  writesClaimed: number;
  writesAfter: number;
  slowestWriteMs: number;
  /** Proxied calls begun during the fault, and the slowest answer. */
  callsDuringFault: number;
  slowestCallMs: number;
  /** Per instance: ms from the store's return to its first successful write. */
  recoveryMs: number[];
  /** Proxied calls answered 200 (before, during, after the fault), and how many of them the exported chain holds. */
  answered200: number;
  inChain: number;
  chainVerifies: boolean;
  chainRecords: number;
  /** Budget counts of GET /v1/messages minus the calls the upstream received: counted but never forwarded. */
  countedNotForwarded: number;
  /** Calls the upstream received that the gateway did not answer 200. */
  forwardedNot200: number;
}

/** Load over every instance; `fault` played for `outageMs`; the store back; everything measured. */
export async function outage(f: Fleet, o: { fault: ForwarderFault; outageMs: number; concurrency: number; leadMs?: number }): Promise<OutageResult> {
  const t = await grantee(f);
  const forwardedBefore = f.api.requests.filter((r) => r.path === "/v1/messages").length;
  let phase: "before" | "fault" | "after" = "before";
  let stop = false;
  let answered200 = 0;
  let callsDuringFault = 0, slowestCallMs = 0;
  let writes = 0, writes503 = 0, writesClaimed = 0, writesAfter = 0, slowestWriteMs = 0;
  let n = 0;
  const caller = async (i: number) => {
    while (!stop) {
      const g = f.gws[(n++ + i) % f.gws.length]!;
      const during = phase === "fault";
      const t0 = performance.now();
      const res = await proxied(g, t.token, "/v1/messages").catch(() => undefined);
      await res?.body?.cancel();
      if (res?.status === 200) answered200++;
      if (during) {
        callsDuringFault++;
        slowestCallMs = Math.max(slowestCallMs, performance.now() - t0);
      }
      if (res === undefined || res.status !== 200) await Bun.sleep(20);
    }
  };
  let w = 0;
  const writer = async (g: Gateway) => {
    while (!stop) {
      const began = phase;
      const t0 = performance.now();
      const res = await createProvider(g, `p${w++}_${crypto.randomUUID().slice(0, 8)}`);
      const ended = phase;
      // a write begun during the fault: answered 503 with Retry-After within the bound — or, only if it ended once the
      // store was back, done (then it did happen)
      if (began === "fault") {
        writes++;
        if (res.status === 503 && res.headers.get("retry-after") !== null) {
          writes503++;
          slowestWriteMs = Math.max(slowestWriteMs, performance.now() - t0);
        } else if (res.status < 300 && ended === "fault") writesClaimed++;
        else if (res.status < 300) writesAfter++;
      }
      await res.body?.cancel();
      await Bun.sleep(began === "fault" ? 10 : 50);
    }
  };
  const loops = [...Array.from({ length: o.concurrency }, (_, i) => caller(i)), ...f.gws.map(writer)];
  await Bun.sleep(o.leadMs ?? 500);
  await f.fwd.setFault(o.fault);
  phase = "fault";
  await Bun.sleep(o.outageMs);
  phase = "after";
  await f.fwd.restore();
  const back = performance.now();
  const recoveryMs = await Promise.all(f.gws.map(async (g) => {
    for (;;) {
      const res = await createProvider(g, `r_${crypto.randomUUID().slice(0, 8)}`);
      await res.body?.cancel();
      if (res.status === 201) return performance.now() - back;
      if (performance.now() - back > 30_000) return Infinity;
      await Bun.sleep(10);
    }
  }));
  await Bun.sleep(300);
  stop = true;
  await Promise.all(loops);
  const chain = await exportChain(f);
  let inChain = 0;
  for (const r of chain.records) {
    if (r.type !== "proxy.call" || r.client_id !== t.clientId) continue;
    for (const c of (r.data as { calls: { path: string; status: number; ms: number[] }[] }).calls) if (c.status === 200 && c.path === "/v1/messages") inChain += c.ms.length;
  }
  const forwarded = f.api.requests.filter((r) => r.path === "/v1/messages").length - forwardedBefore;
  // a count given back while the store was away is given back once it answers (domain/budgets.ts retries): bounded wait
  let counted = await budgetUsed(f, t.clientId, "GET /v1/messages");
  for (const until = performance.now() + 5_000; counted > forwarded && performance.now() < until; counted = await budgetUsed(f, t.clientId, "GET /v1/messages")) await Bun.sleep(100);
  return {
    fault: o.fault, outageMs: o.outageMs, writes, writes503, writesClaimed, writesAfter, slowestWriteMs, callsDuringFault, slowestCallMs, recoveryMs,
    answered200, inChain, chainVerifies: chain.verifies, chainRecords: chain.records.length,
    countedNotForwarded: counted - forwarded, forwardedNot200: forwarded - answered200,
  };
}

function createProvider(g: Gateway, id: string): Promise<Response> {
  return fetch(`${g.baseUrl}/ath/admin/providers`, {
    method: "POST",
    headers: admin(g),
    body: JSON.stringify({
      provider_id: id, display_name: id, available_scopes: ["read"], authorize_endpoint: "https://idp.example/authorize",
      token_endpoint: "https://idp.example/token", client_id: "cid", client_secret: "not-a-real-secret",
    }),
  }).catch(() => new Response(null, { status: 599 }));
}

/**
 * Every instance's export (each writes its own queued events first; while its queue still waits for the store it
 * answers 503, so it is asked again), then the chain as the last one exported it.
 */
export async function exportChain(f: Fleet, o: { timeoutMs?: number } = {}): Promise<{ verifies: boolean; records: Array<Record<string, unknown>>; text: string }> {
  let text = "";
  const until = performance.now() + (o.timeoutMs ?? 20_000);
  for (const g of f.gws) {
    for (;;) {
      const res = await fetch(`${g.baseUrl}/ath/admin/audit/export`, { headers: admin(g) }).catch(() => undefined);
      if (res?.status === 200) {
        text = await res.text();
        break;
      }
      await res?.body?.cancel();
      if (res === undefined || performance.now() > until) break; // a stopped instance, or one that never recovered
      await Bun.sleep(100);
    }
  }
  const lines = text.trim().split("\n").filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>);
  const records = lines.filter((l) => !["key", "checkpoint", "end"].includes(String(l.type)));
  return { verifies: text !== "" && verifyAuditExport(text).ok, records, text };
}

// ——— kill -9 of one instance ———

export interface KillResult { callsToSurvivors: number; survivors200: number; budgetForwarded: number; budgetLimit: number; rejoinMs: number; chainVerifies: boolean }

/** Load over every instance; the last one killed (SIGKILL) mid-load; survivors must keep answering; it restarts and joins. */
export async function killOne(f: Fleet, o: { calls: number; concurrency: number }): Promise<KillResult> {
  const victim = f.gws.at(-1)!;
  const survivors = f.gws.slice(0, -1);
  const { token } = await grantee(f);
  const before = f.api.requests.filter((r) => r.path === "/v1/echo" && r.method === "GET").length;
  let callsToSurvivors = 0, survivors200 = 0, killed = false;
  await pool(o.calls, o.concurrency, async (i) => {
    if (!killed && i >= o.calls / 3) {
      killed = true;
      await victim.kill();
    }
    const g = f.gws[i % f.gws.length]!;
    const res = await proxied(g, token, "/v1/echo").catch(() => undefined);
    await res?.body?.cancel();
    if (g !== victim) {
      callsToSurvivors++;
      if (res?.status === 200 || res?.status === 429) survivors200++;
    }
  });
  const budgetForwarded = f.api.requests.filter((r) => r.path === "/v1/echo" && r.method === "GET").length - before;
  const t0 = performance.now();
  await victim.restart();
  const { token: fresh } = await grantee(f, survivors[0]);
  const r = await proxied(victim, fresh, "/v1/messages");
  await r.body?.cancel();
  if (r.status !== 200) throw new Error(`the restarted instance answered ${r.status}`);
  const rejoinMs = performance.now() - t0;
  const chain = await exportChain(f);
  return { callsToSurvivors, survivors200, budgetForwarded, budgetLimit: f.limit, rejoinMs, chainVerifies: chain.verifies };
}
