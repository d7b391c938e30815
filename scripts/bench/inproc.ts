/**
 * ath's own per-request work, in process: one warm proxied request through `createGateway` (the in-process harness,
 * in-memory SQLite, a scripted provider answering from memory — no socket, no kernel) beside the bare hop's work done
 * the same way (`new URL`, the upstream call, `new Response` around its body), in interleaved batches. The difference
 * is ath's own µs per request: the figure the proxy's throughput ratio depends on (DESIGN §13). Under load the
 * absolute µs grow; the difference's share and the CPU profile's proportions hold.
 *
 * Usage: bun [--cpu-prof --cpu-prof-dir DIR] scripts/bench/inproc.ts [--requests 20000] [--rounds 5] [--post] [--log]
 * --log: the gateway writes its JSON access records (into a sink: the formatting, not the write, is measured).
 */
import { fullFlow } from "../../tests/helpers/agent.ts";
import { createLogger } from "../../src/gateway/ops/log.ts";
import { scriptedGateway } from "../../tests/helpers/in-process.ts";
import { median } from "./lib.ts";

const args = process.argv.slice(2);
const flag = (name: string, fallback: string) => {
  const i = args.indexOf(name);
  const v = args[i + 1];
  return i >= 0 && v !== undefined && !v.startsWith("--") ? v : fallback;
};
const requests = Math.max(1_000, Number(flag("--requests", "20000")));
const rounds = Math.max(1, Number(flag("--rounds", "5")));
const post = args.includes("--post");
const log = args.includes("--log") ? createLogger({ format: "json", level: "info", write: () => undefined }) : undefined;

const SMALL = JSON.stringify({ id: "msg_1", subject: "Quarterly numbers", unread: true, labels: ["inbox"] });
const POST_BODY = JSON.stringify({ data: "x".repeat(1024 - 11) });

const { g, p } = await scriptedGateway((p) => ({ mail: p.config({ scope_rules: { "mail:read": ["GET /small"], "mail:send": ["POST /items"] } }) }), log ? { log } : {});
const { accessToken } = await fullFlow(g, { provider_id: "mail", scopes: ["mail:read", "mail:send"] });
// The scripted API answers these two fixed bodies (it still records each request: cleared between batches).
p.routes.set("/small", () => new Response(SMALL, { headers: { "content-type": "application/json" } }));
p.routes.set("/items", (_req, seen) => Response.json({ received: seen.body.length }, { status: 201 }));

const path = post ? "/ath/proxy/mail/items" : "/ath/proxy/mail/small";
const init = (): RequestInit => ({
  method: post ? "POST" : "GET",
  headers: { authorization: `Bearer ${accessToken}`, "content-type": "application/json", "user-agent": "bench", accept: "*/*", ...(post ? { "content-length": String(POST_BODY.length) } : {}) },
  ...(post ? { body: POST_BODY } : {}),
});
const expected = post ? 201 : 200;

/** The bare hop's own work, through the same in-process network to the same scripted API. */
const upstreamOrigin = "http://provider.test/api";
/** The upstream token ath presents (read off the first warm request): the bare hop presents it as its agent would. */
let upstreamAuthorization = "";
const bare = async (req: Request): Promise<Response> => {
  const u = new URL(req.url);
  const body = req.method === "GET" || req.method === "HEAD" ? undefined : await req.arrayBuffer();
  const headers = new Headers(req.headers);
  headers.set("authorization", upstreamAuthorization);
  const res = await p.fetch(new Request(upstreamOrigin + u.pathname.slice("/ath/proxy/mail".length) + u.search, { method: req.method, headers, body, redirect: "manual" }));
  return new Response(res.body, { status: res.status, headers: res.headers });
};

async function batch(kind: "ath" | "bare", n: number): Promise<number> {
  const t0 = performance.now();
  for (let i = 0; i < n; i++) {
    const req = new Request(`https://gateway.test${path}`, init());
    const res = kind === "ath" ? await g.app.fetch(req) : await bare(req);
    if (res.status !== expected) throw new Error(`${kind}: ${res.status} ${await res.text()}`);
    await res.arrayBuffer();
  }
  const us = ((performance.now() - t0) * 1000) / n;
  if (!upstreamAuthorization && p.api[0]) upstreamAuthorization = `Bearer ${p.api[0].bearer}`;
  p.api.length = 0;
  g.outbound.length = 0;
  return us;
}

// warm: token, grant, agent and provider cached; the first answers checked
await batch("ath", 200);
await batch("bare", 200);
const per = { ath: [] as number[], bare: [] as number[] };
for (let r = 0; r < rounds; r++) {
  for (const k of r % 2 === 0 ? (["ath", "bare"] as const) : (["bare", "ath"] as const)) per[k].push(await batch(k, requests / rounds));
}
const a = median(per.ath);
const b = median(per.bare);
console.log(`${post ? "POST 1 KiB" : "GET small"}: ${requests} requests in ${rounds} interleaved rounds (median µs per request)`);
console.log(`  bare hop work  ${b.toFixed(1)} µs`);
console.log(`  ath            ${a.toFixed(1)} µs   (+${(a - b).toFixed(1)} µs ath's own; ${(b / a).toFixed(2)}× of bare throughput in process)`);
await g.close();
