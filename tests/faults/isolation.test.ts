/**
 * Outbound isolation and connection limits on the compiled gateway (DESIGN §14):
 * - one provider whose API never answers, with 300 requests waiting on it (more than Bun's default process-wide fetch
 *   pool of 256): every one reaches it (`ath serve` sized the pool at launch), one more is refused at once with 502
 *   UPSTREAM_UNAVAILABLE (reason upstream_concurrency), and meanwhile another provider's API, a whole consent (the
 *   callback's code exchange at the provider) and a registration whose key is an identity document fetched over
 *   http all still work;
 * - a client holding --max-connections-per-ip requests open gets 429 for one more; stalled bodies and stalled
 *   headers are cut by the listener's timeouts, while an authenticated proxied request to a slow upstream outlives them.
 * The hanging load is sent over raw sockets, so this test's own fetch pool stays free for the probes.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { connect, type Socket } from "node:net";
import { call, fullFlow, register } from "../helpers/agent.ts";
import { makeAgent } from "../helpers/attestations.ts";
import { ATH_BIN, ensureBinary } from "../helpers/cli-binary.ts";
import { expectError } from "../helpers/expect-error.ts";
import { eventually } from "../helpers/lifecycle.ts";
import { startWorld, type World } from "../helpers/world.ts";

const HANGING = 300;

/**
 * An API that records each request and answers after `delayMs` (never, when null) — but at once to `/stream` (a body
 * whose second half comes `delayMs` later, no declared length) and to `POST /upload` (the bytes it received).
 */
function slowApi(delayMs: number | null) {
  let seen = 0;
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0,
    fetch: async (req) => {
      seen++;
      const path = new URL(req.url).pathname;
      if (path.endsWith("/upload")) return Response.json({ received: (await req.arrayBuffer()).byteLength });
      if (path.endsWith("/stream") && delayMs !== null) {
        const body = new ReadableStream<Uint8Array>({
          async start(c) {
            c.enqueue(new TextEncoder().encode("first half,"));
            await Bun.sleep(delayMs);
            c.enqueue(new TextEncoder().encode("second half"));
            c.close();
          },
        });
        return new Response(body, { headers: { "content-type": "text/plain" } });
      }
      if (delayMs === null) return new Promise<Response>(() => undefined);
      await Bun.sleep(delayMs);
      return Response.json({ slow: true });
    },
  });
  return { url: `http://127.0.0.1:${server.port}`, seen: () => seen, stop: () => server.stop(true) };
}

/** Opens a raw connection and writes `bytes` (no more): the request stays in flight until the gateway answers or cuts it. */
function openRaw(port: number, bytes: string): { socket: Socket; answer: Promise<string>; closed: Promise<void>; received: () => string } {
  const socket = connect(port, "127.0.0.1");
  let text = "";
  let answered: (s: string) => void = () => undefined;
  const answer = new Promise<string>((resolve) => (answered = resolve));
  const closed = new Promise<void>((resolve) => socket.on("close", () => (answered(text), resolve())));
  socket.on("error", () => undefined);
  socket.on("data", (d: Buffer) => {
    text += d.toString();
    if (text.includes("\r\n\r\n")) answered(text);
  });
  socket.on("connect", () => socket.write(bytes));
  return { socket, answer, closed, received: () => text };
}

/** A request through this process's fetch that must answer within 5 s (a starved gateway would not). */
function probe(url: string, init: Parameters<typeof call>[1] = {}) {
  return Promise.race([call(url, init), Bun.sleep(5_000).then(() => Promise.reject(new Error(`no answer within 5 s: ${url}`)))]);
}

beforeAll(() => ensureBinary(), 120_000);

describe("one hanging provider", () => {
  let w: World;
  let hang: ReturnType<typeof slowApi>;
  let docs: ReturnType<typeof Bun.serve>;
  const held: Socket[] = [];

  beforeAll(async () => {
    hang = slowApi(null);
    w = await startWorld({
      binary: ATH_BIN,
      extraArgs: ["--upstream-concurrency", String(HANGING), "--max-connections-per-ip", "2000", "--upstream-timeout", "60"],
      providers: (auth) => ({
        hang: {
          display_name: "Hanging API",
          available_scopes: ["mail:read"],
          authorize_endpoint: auth.authorizeEndpoint,
          token_endpoint: auth.tokenEndpoint,
          api_base_url: hang.url,
          client_id: auth.postClient.client_id,
          client_secret: auth.postClient.client_secret,
        },
      }),
    });
  }, 60_000);
  afterAll(async () => {
    for (const s of held) s.destroy();
    await w?.stop();
    hang?.stop();
    docs?.stop(true);
  });

  test(`${HANGING} requests waiting on it all reach it, one more is 502 upstream_concurrency at once, and everything else still works`, async () => {
    const mail = await fullFlow(w.baseUrl, { provider_id: "mail", scopes: ["mail:read"] });
    const stuck = await fullFlow(w.baseUrl, { provider_id: "hang", scopes: ["mail:read"] });
    for (let i = 0; i < HANGING; i++) {
      held.push(openRaw(w.gw.port, `GET /ath/proxy/hang/v1/x${i} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${stuck.accessToken}\r\n\r\n`).socket);
    }
    // more than Bun's default pool of 256 reach the upstream: the gateway's pool was sized at launch
    await eventually(`${HANGING} requests to reach the hanging API`, () => hang.seen() >= HANGING, 15_000).catch((e: Error) => {
      throw new Error(`${e.message}: ${hang.seen()} did\n${w.gw.output().slice(-800)}`);
    });

    const refused = await probe(`${w.baseUrl}/ath/proxy/hang/v1/one-more`, { headers: { authorization: `Bearer ${stuck.accessToken}` } });
    expectError(refused, "UPSTREAM_UNAVAILABLE");
    expect({ reason: (refused.json.details as Record<string, unknown>).reason, retryAfter: refused.headers.get("retry-after") }).toEqual({
      reason: "upstream_concurrency",
      retryAfter: "1",
    });

    // another provider's API
    expect((await probe(`${w.baseUrl}/ath/proxy/mail/v1/messages`, { headers: { authorization: `Bearer ${mail.accessToken}` } })).status).toBe(200);
    // a whole consent: the callback exchanges the code at the provider's token endpoint
    const again = await Promise.race([
      fullFlow(w.baseUrl, { provider_id: "mail", scopes: ["mail:read"] }),
      Bun.sleep(10_000).then(() => Promise.reject(new Error("a consent flow did not finish within 10 s"))),
    ]);
    expect(again.token.status).toBe(200);
    // a registration whose key must be fetched from its identity document
    const agent = await makeAgent();
    docs = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch: () => Response.json({ ath_version: "0.1", agent_id: agent.agentId, name: "doc agent", developer: { name: "d", id: "d" }, public_key: agent.key.publicJwk }),
    });
    agent.agentId = `http://127.0.0.1:${docs.port}/agent.json`;
    const reg = await Promise.race([
      register(w.baseUrl, agent, { providers: [{ provider_id: "mail", scopes: ["mail:read"] }] }),
      Bun.sleep(5_000).then(() => Promise.reject(new Error("registration did not answer within 5 s"))),
    ]);
    expect({ status: reg.status, agent_status: reg.json.agent_status }).toEqual({ status: 201, agent_status: "approved" });
  }, 60_000);

  test(`SIGTERM with ${HANGING} requests waiting on it: the gateway exits 0 within its 10 s grace (bound asserted: 15 s), not when the upstream answers`, async () => {
    expect(hang.seen()).toBeGreaterThanOrEqual(HANGING); // still waiting: the API never answers
    const t0 = performance.now();
    const exited = await Promise.race([w.gw.stop(), Bun.sleep(15_000).then(() => "still running" as const)]);
    if (exited === "still running") await w.gw.kill();
    expect({ exited, withinBound: performance.now() - t0 < 15_000 }).toEqual({ exited: 0, withinBound: true });
  }, 30_000);
});

describe("connections", () => {
  const MAX = 20;
  let w: World;
  let slow: ReturnType<typeof slowApi>;

  beforeAll(async () => {
    slow = slowApi(12_000);
    w = await startWorld({
      binary: ATH_BIN,
      extraArgs: ["--max-connections-per-ip", String(MAX)],
      providers: (auth) => ({
        slow: {
          display_name: "Slow API",
          available_scopes: ["mail:read"],
          authorize_endpoint: auth.authorizeEndpoint,
          token_endpoint: auth.tokenEndpoint,
          api_base_url: slow.url,
          client_id: auth.postClient.client_id,
          client_secret: auth.postClient.client_secret,
        },
      }),
    });
  }, 60_000);
  afterAll(async () => {
    await w?.stop();
    slow?.stop();
  });

  /** A first call with the token, answered at once: the calls after it are warm (the caller's plan kept, nothing awaited before they leave). */
  async function warm(token: string) {
    const r = await call(`${w.baseUrl}/ath/proxy/slow/v1/upload`, { headers: { authorization: `Bearer ${token}` } });
    expect({ status: r.status, body: r.json }).toEqual({ status: 200, body: { received: 0 } });
  }

  test(`--max-connections-per-ip ${MAX}: one more request is 429 at once; stalled bodies and headers are cut by the timeouts; a slow authenticated proxy call outlives them`, async () => {
    const f = await fullFlow(w.baseUrl, { provider_id: "slow", scopes: ["mail:read"] });
    await warm(f.accessToken);
    const started = Date.now();
    // an authenticated call to an upstream that takes 12 s: longer than the 10 s idle timeout (a warm call, which
    // waits on nothing before it is sent: the relay keeps it once its upstream is slow)
    const slowCall = call(`${w.baseUrl}/ath/proxy/slow/v1/x`, { headers: { authorization: `Bearer ${f.accessToken}` } });
    // MAX - 1 bodies that stop half-way (the slow call is the MAX-th request in flight)
    const stalled = Array.from({ length: MAX - 1 }, () =>
      openRaw(w.gw.port, "POST /ath/token HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"client_id\":"),
    );
    const headers = openRaw(w.gw.port, "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ");
    await Bun.sleep(300);
    const refused = await call(`${w.baseUrl}/health`);
    expectError(refused, "RATE_LIMITED");
    expect({ reason: (refused.json.details as Record<string, unknown>).reason, retryAfter: refused.headers.get("retry-after") }).toEqual({
      reason: "max_connections_per_ip",
      retryAfter: "1",
    });

    // the listener cuts the stalled bodies (idle timeout, 10 s) and the unfinished headers (Bun's ~10 s header timeout)
    await Promise.race([Promise.all([...stalled.map((s) => s.closed), headers.closed]), Bun.sleep(25_000)]);
    const cut = stalled.filter((s) => s.socket.destroyed).length + (headers.socket.destroyed ? 1 : 0);
    expect(cut).toBe(MAX);
    const answered = await Promise.all(stalled.map((s) => s.answer));
    expect(answered.filter((a) => / 5\d\d /.test(a.split("\r\n")[0] ?? ""))).toEqual([]);
    // room again, and the slow upstream's answer arrives after 12 s
    expect((await call(`${w.baseUrl}/health`)).status).toBe(200);
    const r = await slowCall;
    expect({ status: r.status, body: r.json }).toEqual({ status: 200, body: { slow: true } });
    expect(Date.now() - started).toBeGreaterThanOrEqual(12_000);
  }, 60_000);

  test("a warm authenticated call is kept past the 10 s idle rule whenever it may wait: an answer streaming with a 12 s pause, an upload pausing 12 s", async () => {
    const f = await fullFlow(w.baseUrl, { provider_id: "slow", scopes: ["mail:read"] });
    await warm(f.accessToken);
    const started = Date.now();
    const streamed = call(`${w.baseUrl}/ath/proxy/slow/v1/stream`, { headers: { authorization: `Bearer ${f.accessToken}` } });
    // a body sent half, the rest 12 s later
    const upload = (length: number) => {
      const head = `POST /ath/proxy/slow/v1/upload HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${f.accessToken}\r\nContent-Type: application/octet-stream\r\nContent-Length: ${length}\r\n\r\n`;
      const raw = openRaw(w.gw.port, head + "x".repeat(length / 2));
      const rest = Bun.sleep(12_000).then(() => {
        if (!raw.socket.destroyed) raw.socket.write("y".repeat(length / 2));
      });
      return { raw, rest };
    };
    const paused = upload(1_000);
    const r = await streamed;
    expect({ status: r.status, body: r.text }).toEqual({ status: 200, body: "first half,second half" });
    await paused.rest;
    await eventually("the paused upload's answer", () => paused.raw.received().includes('{"received":1000}'), 10_000);
    expect(paused.raw.received().split("\r\n")[0]).toBe("HTTP/1.1 200 OK");
    paused.raw.socket.destroy();
    expect(Date.now() - started).toBeGreaterThanOrEqual(12_000);
  }, 60_000);
});
