/**
 * ANY /ath/proxy/{provider_id}/{path} through a real `ath serve` (Bun.serve and Bun's fetch), a real oidc-provider and
 * an API that checks every bearer token by introspection (DESIGN §3 "Proxy", §8): what only the real HTTP stack can
 * show — byte-exact compressed and streamed bodies, request-targets `fetch` would normalise (dot segments,
 * backslashes, encoded separators, `//host`), request smuggling and raw targets the router cannot place. The proxy's
 * handler logic (token states, scope_rules, header rules, relaying, refresh) is tested in process:
 * tests/unit/gateway/proxy/handler.test.ts. Every refused request is also checked to have never reached the upstream.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { connect } from "node:net";
import { fullFlow } from "../helpers/agent.ts";
import { expectError } from "../helpers/expect-error.ts";
import { rawRequest } from "../helpers/raw-http.ts";
import { startWorld, type World } from "../helpers/world.ts";

let w: World;
let canary: ReturnType<typeof Bun.serve>;
const canaryHits: string[] = [];
let mail: Awaited<ReturnType<typeof fullFlow>>;
let calendar: Awaited<ReturnType<typeof fullFlow>>;

beforeAll(async () => {
  canary = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: (req) => (canaryHits.push(req.url), new Response("canary")) });
  w = await startWorld();
  mail = await fullFlow(w.baseUrl, { provider_id: "mail", scopes: ["openid", "mail:read", "mail:send"] });
  calendar = await fullFlow(w.baseUrl, { provider_id: "calendar", scopes: ["calendar:read"] });
});
afterAll(async () => {
  await canary?.stop(true);
  await w?.stop();
});

const proxy = (path: string) => `${w.baseUrl}/ath/proxy/${path}`;
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

/** Runs `fn` and asserts the upstream API (and the canary) received nothing meanwhile. */
async function upstreamUntouched<T>(fn: () => Promise<T>): Promise<T> {
  const before = w.api.requests.length;
  const canaryBefore = canaryHits.length;
  const result = await fn();
  expect(w.api.requests.slice(before)).toEqual([]);
  expect(canaryHits.length).toBe(canaryBefore);
  return result;
}

describe("Proxy — bodies through the real HTTP stack", () => {
  test("a gzip body passes through byte for byte with its Content-Encoding", async () => {
    const r = await rawRequest(w.gw.port, "GET", "/ath/proxy/mail/v1/gzip", { authorization: `Bearer ${mail.accessToken}`, "accept-encoding": "gzip" });
    expect(r.status).toBe(200);
    expect(r.headers["content-encoding"]).toBe("gzip");
    const json = JSON.parse(new TextDecoder().decode(Bun.gunzipSync(new Uint8Array(r.bytes))));
    expect(json.compressed).toBe(true);
  });

  test("a streamed upstream body arrives complete", async () => {
    const r = await fetch(proxy("mail/v1/stream?chunks=50"), { headers: bearer(mail.accessToken) });
    expect(r.status).toBe(200);
    const text = await r.text();
    expect(text.split("\n").filter(Boolean)).toHaveLength(50);
  });
});

describe("Proxy — path traversal", () => {
  // Bun.serve resolves dot segments (also %2e%2e) and turns `\` into `/` in the request-target before any handler
  // runs; what still reaches the gateway undecoded are encoded separators, which it must refuse itself.
  const encoded = [
    "/ath/proxy/mail/v1/..%2f..%2fadmin",
    "/ath/proxy/mail/v1/%2e%2e%2fsecret",
    "/ath/proxy/mail/v1/%2E%2E%2Fsecret",
    "/ath/proxy/mail/v1/%5c..%5cx",
    "/ath/proxy/mail/v1/..%5cx",
    "/ath/proxy/calendar/..%2fmessages",
    "/ath/proxy/calendar/%2e%2e%2f%2e%2e%2fadmin",
  ];
  test("encoded traversals reach the gateway undecoded and are refused with 400 INVALID_REQUEST, nothing forwarded", async () => {
    for (const target of encoded) {
      const token = target.includes("/calendar/") ? calendar.accessToken : mail.accessToken;
      const r = await upstreamUntouched(() => rawRequest(w.gw.port, "GET", target, { authorization: `Bearer ${token}` }));
      expectError({ status: r.status, text: r.body, headers: r.headers }, "INVALID_REQUEST", { field: "path" });
    }
  });

  test("dot segments and backslashes never take a request outside the provider's api_base_url prefix", async () => {
    const targets = [
      "/ath/proxy/calendar/../messages",
      "/ath/proxy/calendar/%2e%2e/messages",
      "/ath/proxy/calendar/%2E%2E/%2E%2E/ath/admin/providers",
      "/ath/proxy/calendar/echo/../../../x",
      "/ath/proxy/calendar/echo\\..\\..\\x",
    ];
    for (const target of targets) {
      const before = w.api.requests.length;
      const canaryBefore = canaryHits.length;
      const r = await rawRequest(w.gw.port, "GET", target, { authorization: `Bearer ${calendar.accessToken}` });
      expect(canaryHits.length).toBe(canaryBefore);
      const forwarded = w.api.requests.slice(before);
      if (r.status >= 400 && r.status < 500) {
        expect(forwarded).toEqual([]);
        expect(typeof JSON.parse(r.body).code).toBe("string");
      } else {
        // forwarded: only under the calendar prefix /v1
        expect(forwarded.map((f) => f.path.startsWith("/v1/"))).toEqual([true]);
      }
    }
  });

  test("//host in the path never leaves api_base_url's origin", async () => {
    const host = `127.0.0.1:${canary.port}`;
    for (const target of [`/ath/proxy/mail//${host}/x`, `/ath/proxy/mail/%2f%2f${host}/x`, `/ath/proxy/mail/http://${host}/x`]) {
      const canaryBefore = canaryHits.length;
      const before = w.api.requests.length;
      const r = await rawRequest(w.gw.port, "GET", target, { authorization: `Bearer ${mail.accessToken}` });
      expect(canaryHits.length).toBe(canaryBefore);
      if (r.status === 400) {
        expectError({ status: r.status, text: r.body, headers: r.headers }, "INVALID_REQUEST");
        expect(w.api.requests.length).toBe(before);
      } else {
        // forwarded: then only to the sample API itself
        expect(w.api.requests.length).toBe(before + 1);
      }
    }
  });
});

describe("Proxy — request framing", () => {
  /** Writes `request` verbatim on a new connection and returns the status line of the answer. */
  function rawStatusLine(request: string): Promise<string> {
    return new Promise((resolve, reject) => {
      const socket = connect(w.gw.port, "127.0.0.1");
      let out = "";
      socket.on("connect", () => socket.write(request));
      socket.on("data", (c: Buffer) => (out += c.toString("latin1")));
      socket.on("error", reject);
      socket.on("end", () => resolve(out.split("\r\n")[0] ?? ""));
    });
  }

  test("conflicting Content-Length/Transfer-Encoding and bare CR or LF in a header are refused before anything is forwarded", async () => {
    const auth = `Authorization: Bearer ${mail.accessToken}`;
    const before = w.api.requests.length;
    const smuggled = [
      `POST /ath/proxy/mail/v1/echo HTTP/1.1\r\nHost: x\r\n${auth}\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n0\r\n\r\nGET /ath/proxy/mail/v1/echo?smuggled HTTP/1.1\r\nHost: x\r\n\r\n`,
      `GET /ath/proxy/mail/v1/echo HTTP/1.1\r\nHost: x\r\n${auth}\r\nX-Split: a\nX-Injected: 1\r\nConnection: close\r\n\r\n`,
      `GET /ath/proxy/mail/v1/echo HTTP/1.1\r\nHost: x\r\n${auth}\r\nX-Split: a\rX-Injected: 1\r\nConnection: close\r\n\r\n`,
    ];
    for (const request of smuggled) expect(await rawStatusLine(request)).toStartWith("HTTP/1.1 400");
    expect(w.api.requests.slice(before)).toEqual([]);
  });

  test("raw request-targets the router cannot place answer JSON 4xx errors", async () => {
    for (const target of ["//127.0.0.1:1/x", "/ath/%zz", "/ath/agents/register%00"]) {
      const r = await rawRequest(w.gw.port, "GET", target);
      expect(r.status).toBeGreaterThanOrEqual(400);
      expect(r.status).toBeLessThan(500);
      expect(r.body).not.toMatch(/\n\s+at |\.ts:\d+/);
    }
  });
});
