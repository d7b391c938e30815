/**
 * Traces (DESIGN §20) end to end: `ath serve --otlp-endpoint <receiver>` (the real oidc-provider and sample API
 * around it). A proxied call carrying a W3C traceparent is exported within 5 s as a server span of that trace id
 * (parented to the caller's span), with store-call and outbound spans under it; the sample API receives a
 * traceparent of the same trace whose parent is the outbound span ath exported. OTEL_EXPORTER_OTLP_ENDPOINT works too.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { call, fullFlow } from "../helpers/agent.ts";
import { startWorld, type World } from "../helpers/world.ts";

interface ExportedSpan { traceId: string; spanId: string; parentSpanId?: string; name: string; kind: number; attributes: { key: string; value: Record<string, string> }[] }
const batches: unknown[] = [];
let receiver: ReturnType<typeof Bun.serve>;
let world: World;

beforeAll(async () => {
  receiver = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(req) {
      if (req.method !== "POST" || new URL(req.url).pathname !== "/v1/traces") return new Response("no", { status: 404 });
      expect(req.headers.get("content-type")).toBe("application/json");
      batches.push(await req.json());
      return Response.json({});
    },
  });
  // the standard variable; a base URL, /v1/traces appended
  world = await startWorld({ env: { OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${receiver.port}` } });
}, 120_000);
afterAll(async () => {
  await world?.stop();
  receiver?.stop(true);
});

const spans = (): ExportedSpan[] =>
  batches.flatMap((b) => (b as { resourceSpans: { scopeSpans: { spans: ExportedSpan[] }[] }[] }).resourceSpans.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans)));

test("a proxied call's trace: request, store and outbound spans exported within 5 s; the upstream's parent is one of them", async () => {
  const flow = await fullFlow(world.baseUrl, { provider_id: "mail", scopes: ["mail:read"] });
  const traceId = Buffer.from(crypto.getRandomValues(new Uint8Array(16))).toString("hex");
  const callerSpan = "00f067aa0ba902b7";
  world.api.clear();
  const sent = Date.now();
  const r = await call(`${world.baseUrl}/ath/proxy/mail/v1/messages`, { headers: { authorization: `Bearer ${flow.accessToken}`, traceparent: `00-${traceId}-${callerSpan}-01` } });
  expect(r.status).toBe(200);
  const seen = world.api.requests.at(-1)!.headers.traceparent;
  const m = /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/.exec(seen ?? "");
  expect(m?.[1]).toBe(traceId);
  const upstreamParent = m![2]!;
  expect(upstreamParent).not.toBe(callerSpan);

  const deadline = sent + 5_000;
  while (!spans().some((s) => s.spanId === upstreamParent) && Date.now() < deadline) await Bun.sleep(50);
  const mine = spans().filter((s) => s.traceId === traceId);
  const server = mine.find((s) => s.kind === 2)!;
  expect(server).toMatchObject({ parentSpanId: callerSpan, name: "GET /ath/proxy/{provider_id}/*" });
  expect(server.attributes).toContainEqual({ key: "http.response.status_code", value: { intValue: "200" } });
  const outbound = mine.find((s) => s.spanId === upstreamParent);
  expect(outbound).toMatchObject({ kind: 3, parentSpanId: server.spanId });
  expect(mine.some((s) => s.name.startsWith("store.") && s.parentSpanId === server.spanId)).toBe(true);
  // nothing secret in a span
  expect(JSON.stringify(batches)).not.toContain(flow.accessToken);
}, 60_000);

test("a request without traceparent starts a trace of its own; a malformed one is ignored, never an error", async () => {
  const before = new Set(spans().map((s) => s.traceId));
  const res = await call(`${world.baseUrl}/health`, { headers: { traceparent: "00-zzzz-not-a-traceparent" } });
  expect(res.status).toBe(200);
  const deadline = Date.now() + 5_000;
  let fresh: ExportedSpan | undefined;
  while (!fresh && Date.now() < deadline) {
    fresh = spans().find((s) => !before.has(s.traceId) && s.name === "GET /health");
    await Bun.sleep(50);
  }
  expect(fresh?.traceId).toMatch(/^[0-9a-f]{32}$/);
  expect(fresh?.parentSpanId).toBeUndefined();
}, 30_000);
