/**
 * Two builds of the gateway's source in ONE process, measured in interleaved batches of warm proxied requests through
 * each one's createGateway (the in-process harness, in-memory SQLite, a scripted provider): the ratio of their µs per
 * request holds on a loaded machine where separate runs do not compare. Each tree is loaded from its own files.
 * Usage: bun scripts/bench/inproc-ab.ts BEFORE_TREE AFTER_TREE [--requests 20000] [--rounds 10] [--post]
 */
import { resolve } from "node:path";
import { median } from "./lib.ts";

const args = process.argv.slice(2);
const [beforeTree, afterTree] = [resolve(args[0] ?? ""), resolve(args[1] ?? "")];
const flag = (name: string, fallback: string) => {
  const i = args.indexOf(name);
  return i >= 0 && args[i + 1] !== undefined ? args[i + 1]! : fallback;
};
const requests = Number(flag("--requests", "20000"));
const rounds = Number(flag("--rounds", "10"));
const post = args.includes("--post");
const SMALL = JSON.stringify({ id: "msg_1", subject: "Quarterly numbers", unread: true, labels: ["inbox"] });
const POST_BODY = JSON.stringify({ data: "x".repeat(1024 - 11) });

async function setUp(tree: string) {
  const { scriptedGateway } = await import(`${tree}/tests/helpers/in-process.ts`);
  const { fullFlow } = await import(`${tree}/tests/helpers/agent.ts`);
  const { g, p } = await scriptedGateway((p: any) => ({ mail: p.config({ scope_rules: { "mail:read": ["GET /small"], "mail:send": ["POST /items"] } }) }));
  const { accessToken } = await fullFlow(g, { provider_id: "mail", scopes: ["mail:read", "mail:send"] });
  p.routes.set("/small", () => new Response(SMALL, { headers: { "content-type": "application/json" } }));
  p.routes.set("/items", (_req: Request, seen: { body: string }) => Response.json({ received: seen.body.length }, { status: 201 }));
  const path = post ? "/ath/proxy/mail/items" : "/ath/proxy/mail/small";
  return async (n: number): Promise<number> => {
    const t0 = performance.now();
    for (let i = 0; i < n; i++) {
      const req = new Request(`https://gateway.test${path}`, {
        method: post ? "POST" : "GET",
        headers: { authorization: `Bearer ${accessToken}`, "content-type": "application/json", "user-agent": "bench", accept: "*/*", ...(post ? { "content-length": String(POST_BODY.length) } : {}) },
        ...(post ? { body: POST_BODY } : {}),
      });
      const res = await g.app.fetch(req);
      if (res.status !== (post ? 201 : 200)) throw new Error(`${tree}: ${res.status} ${await res.text()}`);
      await res.arrayBuffer();
    }
    const us = ((performance.now() - t0) * 1000) / n;
    p.api.length = 0;
    g.outbound.length = 0;
    return us;
  };
}

const before = await setUp(beforeTree);
const after = await setUp(afterTree);
await before(500);
await after(500);
const a: number[] = [];
const b: number[] = [];
for (let r = 0; r < rounds; r++) {
  const n = Math.round(requests / rounds);
  if (r % 2 === 0) {
    b.push(await before(n));
    a.push(await after(n));
  } else {
    a.push(await after(n));
    b.push(await before(n));
  }
}
const ratios = a.map((x, i) => x / b[i]!);
const diffs = a.map((x, i) => x - b[i]!);
console.log(`${post ? "POST 1 KiB" : "GET small"}, in process, ${rounds} interleaved rounds: before ${median(b).toFixed(1)} µs, after ${median(a).toFixed(1)} µs per request (median); after/before per round: median ${median(ratios).toFixed(3)}, range ${Math.min(...ratios).toFixed(3)}–${Math.max(...ratios).toFixed(3)}; after − before per round: median ${median(diffs).toFixed(2)} µs`);
