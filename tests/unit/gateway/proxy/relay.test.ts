/**
 * What the proxy does with the provider's answers, in process (DESIGN §3 "Proxy", §8): a 401 triggers one refresh and
 * one retry — with a small body replayed byte for byte, never for a streamed one — 429 and 5xx are relayed verbatim
 * and never retried, an unreachable API is 502 UPSTREAM_UNAVAILABLE and one that does not answer in time 504
 * UPSTREAM_TIMEOUT. Each test runs in gateway mode and at /api/{path} of a native-mode gateway (DESIGN §7).
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { fullFlow } from "../../../helpers/agent.ts";
import { expectError } from "../../../helpers/expect-error.ts";
import { asError, type InProcess } from "../../../helpers/in-process.ts";
import { MODES, proxyTwins, type Twins } from "../../../helpers/proxy-twins.ts";
import type { ScriptedProvider } from "../../../helpers/scripted-provider.ts";

/** The exact 429 the API sends, so the test can compare what the agent got byte for byte. */
const RATE_LIMITED = {
  body: '{"error":"rate_limited","detail":"quota of 10 calls per minute used up"}',
  headers: { "retry-after": "120", "x-ratelimit-remaining": "0", "content-type": "application/problem+json" },
};

for (const mode of MODES) describe(`${mode} mode`, () => {
let w: Twins;
let g: InProcess;
let p: ScriptedProvider;
let token: string;
beforeEach(async () => {
  w = await proxyTwins(mode, (p) => ({ mail: p.config(), down: p.config({ api_base_url: "http://down.test/v1" }) }), { upstreamTimeoutMs: 300 });
  ({ p } = w);
  g = w.at("mail");
  token = (await fullFlow(g, { provider_id: "mail", scopes: ["mail:read"] })).accessToken;
});
afterEach(() => w.close());

const proxy = (path: string, init: RequestInit = {}) =>
  w.fetch(`/ath/proxy/mail${path}`, { ...init, headers: { authorization: `Bearer ${token}`, ...init.headers } });
const refreshes = () => p.grants("refresh_token").length;

describe("Proxy — upstream 401", () => {
  test("a small buffered body is replayed byte for byte on the retry", async () => {
    p.expireAccessTokens();
    const body = JSON.stringify({ to: "bob", text: "é".repeat(1000) });
    // as on the wire: a fixed body comes with its Content-Length
    const headers = { "content-type": "application/json", "content-length": String(Buffer.byteLength(body)) };
    const r = await proxy("/once401/post", { method: "POST", body, headers });
    expect(r.status).toBe(200);
    const seen = p.to("/once401/post");
    expect(seen.map((s) => [s.active, s.body])).toEqual([[false, body], [true, body]]);
    expect(refreshes()).toBe(1);
  });

  test("a 401 after the retry is relayed as is: one refresh, no loop", async () => {
    p.routes.set("/always401", () => Response.json({ error: "invalid_token" }, { status: 401, headers: { "www-authenticate": 'Bearer error="invalid_token"' } }));
    const r = await proxy("/always401");
    expect(r.status).toBe(401);
    expect(r.headers.get("www-authenticate")).toBe('Bearer error="invalid_token"');
    expect(await r.json()).toEqual({ error: "invalid_token" });
    expect(p.to("/always401")).toHaveLength(2);
    expect(refreshes()).toBe(1);
  });

  test("a streamed body (no Content-Length, over 1 MiB) is not replayed: the 401 is relayed and nothing is refreshed", async () => {
    p.expireAccessTokens();
    const chunk = new Uint8Array(64 * 1024).fill(120);
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent >= 2 * 1024 * 1024) return controller.close();
        sent += chunk.byteLength;
        controller.enqueue(chunk);
      },
    });
    const r = await proxy("/once401/stream", { method: "POST", body: stream, duplex: "half" } as RequestInit);
    expect(r.status).toBe(401);
    expect(await r.json()).toEqual({ error: "invalid_token" });
    const seen = p.to("/once401/stream");
    expect(seen).toHaveLength(1);
    expect(seen[0]?.body.length).toBe(2 * 1024 * 1024);
    expect(seen[0]?.headers["content-length"]).toBeUndefined();
    expect(refreshes()).toBe(0);
  });
});

describe("Proxy — upstream errors are relayed, never retried", () => {
  test("a 429 is relayed verbatim (status, Retry-After, headers, body) and sent upstream once", async () => {
    p.routes.set("/ratelimited", () => new Response(RATE_LIMITED.body, { status: 429, headers: RATE_LIMITED.headers }));
    const r = await proxy("/ratelimited");
    expect(r.status).toBe(429);
    for (const [name, value] of Object.entries(RATE_LIMITED.headers)) expect(r.headers.get(name)).toBe(value);
    expect(await r.text()).toBe(RATE_LIMITED.body);
    expect(p.to("/ratelimited")).toHaveLength(1);
    expect(refreshes()).toBe(0);
  });

  test("a 503 with Retry-After is relayed verbatim and sent upstream once", async () => {
    p.routes.set("/unavailable", () => new Response("down for maintenance", { status: 503, headers: { "retry-after": "30" } }));
    const r = await proxy("/unavailable");
    expect(r.status).toBe(503);
    expect(r.headers.get("retry-after")).toBe("30");
    expect(await r.text()).toBe("down for maintenance");
    expect(p.to("/unavailable")).toHaveLength(1);
  });

  test("an unreachable API answers 502 UPSTREAM_UNAVAILABLE naming its origin", async () => {
    const down = await fullFlow(w.at("down"), { provider_id: "down", scopes: ["mail:read"] });
    const r = await w.fetch("/ath/proxy/down/messages", { headers: { authorization: `Bearer ${down.accessToken}` } });
    expectError(await asError(r), "UPSTREAM_UNAVAILABLE", { url_origin: "http://down.test" });
    expect(w.at("down").outbound.filter((u) => u.startsWith("GET http://down.test/"))).toEqual(["GET http://down.test/v1/messages"]);
  });

  test("an API that does not answer within --upstream-timeout answers 504 UPSTREAM_TIMEOUT, and the request is not retried", async () => {
    p.routes.set("/slow", () => new Promise<Response>(() => undefined));
    const r = await proxy("/slow");
    expectError(await asError(r), "UPSTREAM_TIMEOUT", { url_origin: p.origin });
    expect(p.to("/slow")).toHaveLength(1);
    expect(refreshes()).toBe(0);
  });
});
});
