/**
 * The audit chain's costs (DESIGN §20), in one run:
 * 1. the offline verifier on an export of 10,000 records made by the gateway (HTTP export, in process) — budget < 1 s;
 * 2. proxy throughput with every call audited (proxy.call, hashed and chained in batches) against the same gateway
 *    with proxied calls left out of the audit — interleaved rounds, same process, same store file — budget ≥ 0.95×;
 *    beside req/s, the process's CPU time per request (process.cpuUsage; the in-process load generator's included),
 *    which holds better than throughput on a shared machine: the difference is what the audit record costs a call.
 * Measured in process (no sockets: the strictest ratio) and over HTTP on loopback (Bun.serve in front of the same
 * gateway); the demo upstream answers from memory in both.
 *
 * Usage: bun scripts/bench/audit.ts [--records 10000] [--requests 2000] [--concurrency 16] [--rounds 6]
 */
import { loadavg } from "node:os";
import { join } from "node:path";
import { verifyAuditExport } from "../../src/agent/audit-verify.ts";
import type { AuditEvent } from "../../src/store/types.ts";
import { openSqliteStore } from "../../src/store/sqlite.ts";
import { makeAgent } from "../../tests/helpers/attestations.ts";
import { ADMIN_TOKEN, inProcessGateway, tokenFor } from "../../tests/helpers/in-process.ts";
import { tempDir } from "../../tests/helpers/net.ts";

const args = process.argv.slice(2);
const flag = (name: string, fallback: number) => {
  const i = args.indexOf(name);
  return i >= 0 && args[i + 1] ? Number(args[i + 1]) : fallback;
};
const RECORDS = flag("--records", 10_000);
const REQUESTS = flag("--requests", 2_000);
const CONCURRENCY = flag("--concurrency", 16);
const ROUNDS = flag("--rounds", 6);

const dir = await tempDir("bench-audit");
try {
  console.log(`load average at start: ${loadavg().map((l) => l.toFixed(2)).join(" ")}`);

  // 1. verify
  {
    const g = await inProcessGateway({ store: openSqliteStore(join(dir.path, "verify.db")) });
    for (let i = 0; i < RECORDS; i++) {
      g.gw.auditLog.push({ type: "proxy.call", at: g.clock.ms + i, client_id: "ath_bench", agent_id: "https://agent.example/a", user_id: "u1", provider_id: "demo", data: { method: "GET", path: `/notes/${i}`, status: 200 } });
    }
    await g.gw.auditLog.flush();
    const res = await g.fetch("/ath/admin/audit/export", { headers: { "x-ath-user-token": ADMIN_TOKEN } });
    const text = await res.text();
    const times: number[] = [];
    let result: ReturnType<typeof verifyAuditExport> | undefined;
    for (let i = 0; i < 5; i++) {
      const t = performance.now();
      result = verifyAuditExport(text);
      times.push(performance.now() - t);
    }
    if (!result?.ok) throw new Error(`export did not verify: ${JSON.stringify(result)}`);
    times.sort((a, b) => a - b);
    console.log(`verify: ${result.records} records, ${result.checkpoints} checkpoints, ${(text.length / 1e6).toFixed(1)} MB: median ${times[2]!.toFixed(0)} ms (min ${times[0]!.toFixed(0)}, max ${times[4]!.toFixed(0)})`);
    await g.close();
  }

  // 2. proxy throughput, audited vs not
  {
    const g = await inProcessGateway({ store: openSqliteStore(join(dir.path, "proxy.db")) });
    const { accessToken } = await tokenFor(g, await makeAgent());
    // Proxied calls reach the queue through group() (a token's calls of one batch: one proxy.call record); left out, not audited.
    const group = g.gw.auditLog.group.bind(g.gw.auditLog);
    const skipProxyCalls = () => undefined;
    // Over HTTP too: the same gateway behind Bun.serve on loopback (the upstream still answers from memory).
    const server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: (req) => g.app.fetch(req) });
    const overHttp = `http://127.0.0.1:${server.port}/ath/proxy/demo/notes`;
    /** Process CPU (user + system) per request of the last round, in µs: the load generator's share included. */
    let cpuPerRequest = 0;
    const round = async (http: boolean): Promise<number> => {
      let next = 0;
      const cpu = process.cpuUsage();
      const t = performance.now();
      await Promise.all(
        Array.from({ length: CONCURRENCY }, async () => {
          while (next++ < REQUESTS) {
            const init = { headers: { authorization: `Bearer ${accessToken}` } };
            const res = http ? await fetch(overHttp, init) : await g.fetch("/ath/proxy/demo/notes", init);
            if (res.status !== 200) throw new Error(`proxy: ${res.status}`);
            await res.arrayBuffer();
          }
        }),
      );
      await g.gw.auditLog.flush(); // the audited side pays for its writes inside its round
      const elapsed = performance.now() - t;
      const used = process.cpuUsage(cpu);
      cpuPerRequest = (used.user + used.system) / REQUESTS;
      return REQUESTS / (elapsed / 1000);
    };
    const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
    for (const http of [false, true]) {
      await round(http); // warm-up
      const on: number[] = [];
      const off: number[] = [];
      const cpuOn: number[] = [];
      const cpuOff: number[] = [];
      for (let r = 0; r < ROUNDS; r++) {
        for (const audited of r % 2 === 0 ? [true, false] : [false, true]) {
          g.gw.auditLog.group = audited ? group : skipProxyCalls;
          (audited ? on : off).push(await round(http));
          (audited ? cpuOn : cpuOff).push(cpuPerRequest);
        }
      }
      const head = await g.gw.store.auditHead();
      console.log(`proxy ${http ? "over HTTP (loopback)" : "in process"}, ${CONCURRENCY} concurrent, ${REQUESTS} requests × ${ROUNDS} rounds each: audited ${med(on).toFixed(0)} req/s, not audited ${med(off).toFixed(0)} req/s → ratio ${(med(on) / med(off)).toFixed(3)} (chain head seq ${head.seq})`);
      console.log(`  process CPU per request (load generator included): audited ${med(cpuOn).toFixed(1)} µs, not audited ${med(cpuOff).toFixed(1)} µs → audit ${(med(cpuOn) - med(cpuOff)).toFixed(1)} µs per call`);
    }
    g.gw.auditLog.group = group;
    server.stop(true);
    await g.close();
  }
  console.log(`load average at end: ${loadavg().map((l) => l.toFixed(2)).join(" ")}`);
} finally {
  await dir.remove();
}
