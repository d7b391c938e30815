/**
 * The sweeper at scale (DESIGN §14): a store holding N tokens, half of them expired past retention, swept while an
 * event-loop meter (a 1 ms interval measuring its own lateness) runs — the longest stall is what a request arriving
 * during the sweep would wait. Also the cost of one indexed lookup among N tokens against one among 1,000.
 *
 * The agents table holds `--agents` registrations too, all older than the retention: nine in ten with an approved
 * scope (kept), one in ten never given one (swept) — the sweep must find the latter without walking the former.
 *
 * Usage: bun scripts/bench/sweep.ts [--tokens 1000000] [--agents 200000] [--postgres [postgres://postgres@127.0.0.1:5432/test]]
 */
import { Database } from "bun:sqlite";
import { SQL } from "bun";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { openPostgresStore, openSqliteStore } from "../../src/store/index.ts";
import type { Store } from "../../src/store/types.ts";
import { median } from "./lib.ts";

const args = process.argv.slice(2);
const flag = (name: string, fallback: string) => {
  const i = args.indexOf(name);
  const v = args[i + 1];
  return i >= 0 && v !== undefined && !v.startsWith("--") ? v : fallback;
};
const n = Number(flag("--tokens", "1000000"));
const agents = Number(flag("--agents", "200000"));
const pgUrl = args.includes("--postgres") ? flag("--postgres", "postgres://postgres@127.0.0.1:5432/test") : undefined;
const NOW = Date.now();
const RETAIN_MS = 86_400_000;

const dir = mkdtempSync(join(tmpdir(), "ath-sweep-"));
try {
  const path = join(dir, "ath.db");
  openSqliteStore(path).close();
  fillSqlite(path, n);
  await measure(`SQLite, ${n.toLocaleString("en")} tokens (half expired past retention), ${agents.toLocaleString("en")} old agents`, openSqliteStore(path), n);
  if (pgUrl) {
    const schema = `bench_sweep_${crypto.randomUUID().slice(0, 8)}`;
    const store = await openPostgresStore(pgUrl, { schema });
    const sql = new SQL(pgUrl, { connection: { search_path: schema } });
    try {
      await fillPostgres(sql, n);
      await measure(`PostgreSQL, ${n.toLocaleString("en")} tokens (half expired past retention), ${agents.toLocaleString("en")} old agents`, store, n);
    } finally {
      await sql.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await sql.close();
    }
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}

async function measure(label: string, store: Store, count: number): Promise<void> {
  const lookups = async (hashes: string[]) => {
    const samples: number[] = [];
    for (const h of hashes) {
      const t = performance.now();
      await store.getToken(h);
      samples.push((performance.now() - t) * 1000);
    }
    return median(samples);
  };
  const few = await lookups(Array.from({ length: 2_000 }, (_, i) => hash(i % 1_000)));
  const many = await lookups(Array.from({ length: 2_000 }, () => hash(Math.floor(Math.random() * count))));
  let longest = 0;
  let last = performance.now();
  const meter = setInterval(() => {
    const t = performance.now();
    longest = Math.max(longest, t - last - 1);
    last = t;
  }, 1);
  const started = performance.now();
  const swept = await store.sweep(NOW, RETAIN_MS);
  const took = performance.now() - started;
  clearInterval(meter);
  console.log(`── ${label}`);
  console.log(`  token lookup, median: ${few.toFixed(1)} µs among the first 1,000, ${many.toFixed(1)} µs among all (${(many / few).toFixed(2)}×)`);
  console.log(
    `  sweep: ${swept.tokens.toLocaleString("en")} tokens and ${swept.agents.toLocaleString("en")} agents deleted in ${(took / 1000).toFixed(1)} s; longest event-loop stall ${longest.toFixed(1)} ms`,
  );
  await store.close();
}

function hash(i: number): string {
  return Bun.SHA256.hash(`bench-token-${i}`, "hex");
}

/** One agent and `count` tokens; odd ones expired two days ago. */
function fillSqlite(path: string, count: number): void {
  const db = new Database(path);
  db.run("INSERT INTO agents (client_id, client_secret_hash, agent_id, developer, status, approvals, approval_expires, created_at) VALUES ('ath_bench', 'x', 'bench', '{}', 'approved', '[]', ?, ?)", [NOW + 1e9, NOW]);
  const insert = db.prepare("INSERT INTO tokens (token_hash, token_id, client_id, agent_id, user_id, provider_id, scopes, grant_id, created_at, expires_at, revoked_at) VALUES (?, ?, 'ath_bench', 'bench', 'u', 'p', '[]', NULL, ?, ?, NULL)");
  const agent = db.prepare("INSERT INTO agents (client_id, client_secret_hash, agent_id, developer, status, approvals, approval_expires, created_at) VALUES (?, 'x', ?, '{}', ?, ?, ?, ?)");
  db.transaction(() => {
    for (let i = 0; i < count; i++) insert.run(hash(i), `ath_tkid_bench${i}`, NOW, i % 2 === 1 ? NOW - 2 * RETAIN_MS : NOW + 3_600_000);
    for (let i = 0; i < agents; i++) agent.run(...agentRow(i));
  })();
  db.close();
}

async function fillPostgres(sql: SQL, count: number): Promise<void> {
  await sql`INSERT INTO agents (client_id, client_secret_hash, agent_id, developer, status, approvals, approval_expires, created_at)
            VALUES ('ath_bench', 'x', 'bench', '{}', 'approved', '[]', ${NOW + 1e9}, ${NOW})`;
  for (let start = 0; start < count; start += 5_000) {
    const rows = Array.from({ length: Math.min(5_000, count - start) }, (_, k) => {
      const i = start + k;
      return { token_hash: hash(i), token_id: `ath_tkid_bench${i}`, client_id: "ath_bench", agent_id: "bench", user_id: "u", provider_id: "p", scopes: "[]", created_at: NOW, expires_at: i % 2 === 1 ? NOW - 2 * RETAIN_MS : NOW + 3_600_000 };
    });
    await sql`INSERT INTO tokens ${sql(rows)}`;
  }
  for (let start = 0; start < agents; start += 5_000) {
    const rows = Array.from({ length: Math.min(5_000, agents - start) }, (_, k) => {
      const [client_id, agent_id, status, approvals, approval_expires, created_at] = agentRow(start + k);
      return { client_id, client_secret_hash: "x", agent_id, developer: "{}", status, approvals, approval_expires, created_at };
    });
    await sql`INSERT INTO agents ${sql(rows)}`;
  }
}

/** An agent registered two retentions ago: one in ten never got a scope. */
function agentRow(i: number): [string, string, string, string, number, number] {
  const scoped = i % 10 !== 0;
  const approvals = JSON.stringify([{ provider_id: "p", approved_scopes: scoped ? ["read"] : [], denied_scopes: scoped ? [] : ["read"] }]);
  return [`ath_a${i}`, `agent-${i}`, scoped ? "approved" : "denied", approvals, NOW + 1e9, NOW - 2 * RETAIN_MS];
}
