/**
 * Webhooks (DESIGN §20) against the compiled gateway: subscribed with `ath admin webhooks add` (secret on stdin),
 * delivered to a local receiver that first fails (retried with backoff, never the second event before the first),
 * then hangs — and the gateway is killed with SIGKILL mid-delivery — then recovers: after the restart every event
 * arrives, in order, each with a valid `ATH-Signature` (HMAC-SHA256 over "<t>.<body>"); at least once, so an event
 * may come twice, never out of order.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { createHmac, timingSafeEqual } from "node:crypto";
import { registeredAgent } from "../helpers/agent.ts";
import { ATH_BIN, athEnv, ensureBinary, ath } from "../helpers/cli-binary.ts";
import { startGateway, type Gateway } from "../helpers/gateway.ts";
import { tempDir } from "../helpers/net.ts";

const SECRET = "whsec_e2e_0123456789abcdef";
type Mode = "fail" | "hang" | "ok";
let mode: Mode = "fail";
const received: { body: string; signature: string; answered: number }[] = [];
let hanging = 0;
let receiver: ReturnType<typeof Bun.serve>;
let gw: Gateway;
let home: { path: string; remove: () => Promise<void> };

beforeAll(async () => {
  ensureBinary();
  receiver = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    idleTimeout: 0,
    async fetch(req) {
      const body = await req.text();
      const now = mode;
      const status = now === "ok" ? 200 : now === "fail" ? 500 : 0;
      received.push({ body, signature: req.headers.get("ath-signature") ?? "", answered: status });
      if (now === "hang") {
        hanging++;
        await new Promise(() => undefined); // never answers: the gateway is killed meanwhile
      }
      return new Response(null, { status });
    },
  });
  gw = await startGateway({ binary: true, providers: {}, extraArgs: ["--demo", "--dev", "--approval", "auto"] });
  home = await tempDir("webhooks");
}, 120_000);
afterAll(async () => {
  await gw?.cleanup();
  receiver?.stop(true);
  await home?.remove();
});

const admin = (...args: string[]) => ath(home.path, ["admin", ...args, "-g", gw.baseUrl], { ATH_ADMIN_TOKEN: gw.adminToken });
async function eventually(what: string, check: () => boolean, limitMs = 40_000): Promise<void> {
  const until = Date.now() + limitMs;
  while (!check()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}; received: ${received.map((r) => `${r.answered}:${JSON.parse(r.body).id}`).join(" ")}\n${gw.output()}`);
    await Bun.sleep(100);
  }
}

function verified(r: { body: string; signature: string }): boolean {
  const m = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(r.signature);
  if (!m) return false;
  const expected = createHmac("sha256", SECRET).update(`${m[1]}.${r.body}`).digest();
  return timingSafeEqual(expected, Buffer.from(m[2]!, "hex")) && Math.abs(Number(m[1]) - Date.now() / 1000) < 120;
}

test("fails, then a SIGKILL mid-delivery, then recovery: every event delivered, in order, signed", async () => {
  const url = `http://127.0.0.1:${receiver.port}/hook`;
  // subscribe through the CLI (secret on stdin); the API answered 201 and never shows the secret
  const p = Bun.spawn([ATH_BIN, "admin", "webhooks", "add", url, "--events", "agent.registered,token.issued", "-g", gw.baseUrl, "--format", "json"], {
    env: athEnv(home.path, { ATH_ADMIN_TOKEN: gw.adminToken }),
    stdin: new TextEncoder().encode(`${SECRET}\n`),
    stdout: "pipe",
    stderr: "pipe",
  });
  const [out, err, code] = await Promise.all([new Response(p.stdout).text(), new Response(p.stderr).text(), p.exited]);
  expect(code, err).toBe(0);
  const hook = JSON.parse(out);
  expect(hook).toMatchObject({ url, events: ["agent.registered", "token.issued"] });
  expect(out).not.toContain(SECRET);
  const list = await admin("webhooks", "list", "--format", "json");
  expect(list.json().webhooks).toEqual([hook]);

  // three events while the receiver fails: the first is retried, the others wait behind it
  const ids: string[] = [];
  for (let i = 0; i < 3; i++) ids.push((await registeredAgent(gw.baseUrl, { providers: [{ provider_id: "demo", scopes: ["notes:read"] }] })).client.client_id);
  await eventually("two failed attempts", () => received.length >= 2);
  const firstEvent = JSON.parse(received[0]!.body);
  expect(received.every((r) => JSON.parse(r.body).id === firstEvent.id)).toBe(true);
  expect(firstEvent).toMatchObject({ type: "agent.registered", data: { client_id: ids[0] } });
  expect(Object.keys(firstEvent).sort()).toEqual(["data", "id", "time", "type"]);
  const metrics = await (await fetch(`${gw.baseUrl}/metrics`, { headers: { authorization: `Bearer ${gw.adminToken}` } })).text();
  expect(metrics).toMatch(/ath_webhook_deliveries_total\{result="error"\} [1-9]/);

  // the receiver now hangs: the gateway is killed in the middle of a delivery
  mode = "hang";
  await eventually("a delivery in flight", () => hanging > 0);
  await gw.kill();
  mode = "ok";
  await gw.restart();

  // after the dead instance's lease lapses, everything arrives
  await eventually("all three events delivered", () => new Set(received.filter((r) => r.answered === 200).map((r) => JSON.parse(r.body).id)).size === 3);
  for (const r of received) expect(verified(r)).toBe(true);
  // in order: the sequence of distinct ids as first sent is the order of the registrations, and no later event was
  // ever sent before an earlier one was delivered
  const order: string[] = [];
  for (const r of received) {
    const id = JSON.parse(r.body).id;
    if (!order.includes(id)) order.push(id);
  }
  expect(order.map((id) => JSON.parse(received.find((r) => JSON.parse(r.body).id === id)!.body).data.client_id)).toEqual(ids);
  let delivered = 0;
  for (const r of received) {
    const at = order.indexOf(JSON.parse(r.body).id);
    expect(at).toBeLessThanOrEqual(delivered);
    if (r.answered === 200 && at === delivered) delivered++;
  }
  const after = await (await fetch(`${gw.baseUrl}/metrics`, { headers: { authorization: `Bearer ${gw.adminToken}` } })).text();
  expect(after).toMatch(/ath_webhook_deliveries_total\{result="ok"\} 3/);

  // remove: gone from the list; an unknown id is exit 4
  expect((await admin("webhooks", "remove", hook.webhook_id)).code).toBe(0);
  expect((await admin("webhooks", "list", "--format", "json")).json().webhooks).toEqual([]);
  expect((await admin("webhooks", "remove", hook.webhook_id)).code).toBe(4);
}, 120_000);
