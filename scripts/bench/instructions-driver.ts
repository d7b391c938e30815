/**
 * The run `instructions.ts` counts: TREE's in-process gateway, one token, then 3,000 uncounted warm calls and N more,
 * each through the proxy prefix's own entry (what `Bun.serve`'s routes call), its answer read whole.
 *
 * Usage: bun scripts/bench/instructions-driver.ts TREE N get|post
 */
import { join } from "node:path";

const [tree, n, shape] = process.argv.slice(2);
if (!tree || !n || !shape) throw new Error("usage: instructions-driver.ts TREE N get|post");
const post = shape === "post";
const { fullFlow } = (await import(join(tree, "tests/helpers/agent.ts"))) as typeof import("../../tests/helpers/agent.ts");
const { scriptedGateway } = (await import(join(tree, "tests/helpers/in-process.ts"))) as typeof import("../../tests/helpers/in-process.ts");

const SMALL = JSON.stringify({ id: "msg_1", subject: "Quarterly numbers", unread: true, labels: ["inbox"] });
const POST_BODY = JSON.stringify({ data: "x".repeat(1024 - 11) });
const { g, p } = await scriptedGateway((p) => ({ mail: p.config({ scope_rules: { "mail:read": ["GET /small"], "mail:send": ["POST /items"] } }) }));
const { accessToken } = await fullFlow(g, { provider_id: "mail", scopes: ["mail:read", "mail:send"] });
p.routes.set("/small", () => new Response(SMALL, { headers: { "content-type": "application/json" } }));
p.routes.set("/items", (_req, seen) => Response.json({ received: seen.body.length }, { status: 201 }));
const path = post ? "/ath/proxy/mail/items" : "/ath/proxy/mail/small";
const entry = g.app.under["/ath/proxy/"] ?? g.app.fetch;
const headers = { authorization: `Bearer ${accessToken}`, "content-type": "application/json", "user-agent": "bench", accept: "*/*" };

async function calls(count: number): Promise<void> {
  for (let i = 0; i < count; i++) {
    const req = new Request(`https://gateway.test${path}`, post ? { method: "POST", headers: { ...headers, "content-length": String(POST_BODY.length) }, body: POST_BODY } : { headers });
    const res = await entry(req);
    if (res.status !== (post ? 201 : 200)) throw new Error(`${res.status} ${await res.text()}`);
    await res.arrayBuffer();
    // the scripted provider and the harness record every call: kept short
    if (p.api.length > 500) p.api.length = 0;
    if (g.outbound.length > 500) g.outbound.length = 0;
  }
}

await calls(3_000);
await calls(Number(n));
await g.close();
