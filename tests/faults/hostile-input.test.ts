/**
 * Hostile input to the compiled gateway, as raw bytes over TCP (node:net) — what fetch would never send: malformed
 * Host headers, absolute-form and authority-form (CONNECT) targets, `*`, invalid UTF-8 in the path, HTTP/1.0 without
 * Host — and an upstream answering a status no Response can carry (0, 99, 799). DESIGN §14 "No 5xx from input": every
 * one is a 4xx (a JSON error wherever the gateway answers, not Bun's bare 400) or a 502, never a 500.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createServer, connect, type Server } from "node:net";
import { call, fullFlow } from "../helpers/agent.ts";
import { ATH_BIN, ensureBinary } from "../helpers/cli-binary.ts";
import { expectError } from "../helpers/expect-error.ts";
import { startWorld, type World } from "../helpers/world.ts";

/** Sends `bytes` (latin1) to 127.0.0.1:port and returns the status line's code and the body. */
function raw(port: number, bytes: string): Promise<{ status: number; body: string; text: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1");
    let text = "";
    socket.on("connect", () => socket.write(Buffer.from(bytes, "latin1")));
    socket.on("data", (d: Buffer) => (text += d.toString("latin1")));
    socket.on("error", reject);
    const done = () => {
      const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(text)?.[1] ?? 0);
      resolve({ status, body: text.slice(text.indexOf("\r\n\r\n") + 4), text });
      socket.destroy();
    };
    socket.on("close", done);
    setTimeout(done, 3000);
  });
}

/** An upstream API that answers every request with the raw status line `HTTP/1.1 <status> X`. */
function weirdUpstream(status: () => string): Promise<{ server: Server; url: string }> {
  return new Promise((resolve) => {
    const server = createServer((s) => {
      s.on("error", () => undefined);
      s.once("data", () => s.end(`HTTP/1.1 ${status()} Weird\r\nContent-Length: 2\r\nConnection: close\r\n\r\nhi`));
    });
    server.listen(0, "127.0.0.1", () => {
      const address = server.address() as { port: number };
      resolve({ server, url: `http://127.0.0.1:${address.port}` });
    });
  });
}

let w: World;
let weird: Awaited<ReturnType<typeof weirdUpstream>>;
let weirdStatus = "799";
let token = "";

beforeAll(async () => {
  ensureBinary();
  weird = await weirdUpstream(() => weirdStatus);
  w = await startWorld({
    binary: ATH_BIN,
    extraArgs: ["--demo"],
    providers: (auth) => ({
      weird: {
        display_name: "Weird API",
        available_scopes: ["mail:read"],
        authorize_endpoint: auth.authorizeEndpoint,
        token_endpoint: auth.tokenEndpoint,
        api_base_url: weird.url,
        client_id: auth.postClient.client_id,
        client_secret: auth.postClient.client_secret,
      },
    }),
  });
  token = (await fullFlow(w.baseUrl, { provider_id: "mail", scopes: ["mail:read"] })).accessToken;
}, 120_000);
afterAll(async () => {
  await w?.stop();
  weird?.server.close();
});

const CASES: [string, string][] = [
  ["CONNECT, authority-form", "CONNECT 127.0.0.1:80 HTTP/1.1\r\nHost: 127.0.0.1:80\r\n\r\n"],
  ["CONNECT to the proxy", "CONNECT /ath/proxy/mail/v1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"],
  ["absolute-form target", "GET http://evil.example/health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"],
  ["absolute-form proxy target", "GET http://evil.example/ath/proxy/mail/v1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"],
  ["absolute-form, malformed authority", "GET http://[::1/x HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"],
  ["Host: unclosed IPv6", "GET /.well-known/ath.json HTTP/1.1\r\nHost: [::1\r\n\r\n"],
  ["Host with a space", "GET /health HTTP/1.1\r\nHost: a b\r\n\r\n"],
  ["Host: %%%", "POST /ath/token HTTP/1.1\r\nHost: %%%\r\nContent-Length: 2\r\n\r\n{}"],
  ["Host with userinfo", "GET /.well-known/ath.json HTTP/1.1\r\nHost: a@b\r\n\r\n"],
  ["Host port out of range", "POST /ath/agents/register HTTP/1.1\r\nHost: 127.0.0.1:99999\r\nContent-Length: 2\r\n\r\n{}"],
  ["Host with a slash, to a page", "GET /ath/consent/abc HTTP/1.1\r\nHost: a/b\r\n\r\n"],
  ["Host: unclosed IPv6, to the sandbox provider (was a 500)", "GET /demo/oauth/authorize HTTP/1.1\r\nHost: [::1\r\n\r\n"],
  ["Host: ::::, to the proxy", "GET /ath/proxy/mail/v1/messages HTTP/1.1\r\nHost: ::::\r\n\r\n"],
  ["Host with a control character", "GET /health HTTP/1.1\r\nHost: \x01\r\n\r\n"],
  ["two Host headers", "GET /health HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"],
  ["no Host, HTTP/1.1", "GET /health HTTP/1.1\r\n\r\n"],
  ["asterisk-form", "OPTIONS * HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"],
  ["invalid UTF-8 in the path", "GET /ath/proxy/mail/v1/\xff\xfe HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"],
  ["a relative target", "GET health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"],
  ["dot segments before the route", "GET //x/../ath/revoke HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"],
  ["TRACE to the proxy", "TRACE /ath/proxy/mail/v1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"],
];

describe("raw requests over TCP", () => {
  for (const [name, bytes] of CASES) {
    test(`${name}: answered below 500 — a JSON error when the gateway refuses it`, async () => {
      const r = await raw(w.gw.port, bytes.replace("\r\n\r\n", "\r\nConnection: close\r\n\r\n"));
      expect({ name, answered: r.status >= 200 && r.status < 500 }).toEqual({ name, answered: true });
      // a body, if any, is the gateway's JSON error (Bun answers some malformed requests itself, with no body)
      if (r.status >= 400 && r.body.trim() !== "") expect(Object.keys(JSON.parse(r.body))).toContain("code");
    });
  }

  test("known limit: a control character in the method is refused by Bun's HTTP parser itself (505, no body), before the gateway sees it", async () => {
    const r = await raw(w.gw.port, "G\x01T /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    expect({ status: r.status, body: r.body }).toEqual({ status: 505, body: "" });
  });

  test("HTTP/1.0 without Host (a plain health probe) is answered as for the gateway's own origin", async () => {
    const r = await raw(w.gw.port, "GET /health HTTP/1.0\r\n\r\n");
    expect(r.status).toBe(200);
    expect(JSON.parse(r.body).status).toBe("ok");
  });

  test("an absolute-form target with a live token reaches the route named by its path, nothing else", async () => {
    const r = await raw(w.gw.port, `GET http://evil.example/ath/proxy/mail/v1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${token}\r\nConnection: close\r\n\r\n`);
    expect(r.status).toBe(200);
  });
});

describe("a client that hangs up mid-body (issue 35 #14)", () => {
  test("is not an internal error: no 500 in the access log and no `internal error` line, on a protocol route and the proxy", async () => {
    const before = w.gw.output().length;
    for (const [target, auth] of [["/ath/agents/register", ""], ["/ath/token", ""], ["/ath/proxy/mail/v1/messages", `Authorization: Bearer ${token}\r\n`]] as const) {
      await new Promise<void>((resolve) => {
        const socket = connect(w.gw.port, "127.0.0.1");
        socket.on("connect", () => socket.write(`POST ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\n${auth}Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"agent_id": "`));
        socket.on("error", () => undefined);
        setTimeout(() => (socket.destroy(), resolve()), 150);
      });
    }
    // the access records are written once each request ends: wait for the three (a bound, not a sleep to pass)
    const records = () => w.gw.output().slice(before).split("\n").filter((l) => /"msg":"request"|request/.test(l) && /\/ath\/(agents\/register|token|proxy)/.test(l));
    for (let i = 0; i < 100 && records().length < 3; i++) await Bun.sleep(20);
    const log = w.gw.output().slice(before);
    expect(records().length).toBeGreaterThanOrEqual(3);
    expect(log).not.toContain("internal error");
    expect(log).not.toMatch(/"status":500|status=500| 500 /);
  });
});

describe("an upstream answering a status outside 200–599", () => {
  test("0, 99 and 799 are 502 UPSTREAM_UNAVAILABLE (details.reason invalid_status), never a 500", async () => {
    const f = await fullFlow(w.baseUrl, { provider_id: "weird", scopes: ["mail:read"] });
    for (const status of ["799", "099", "000"]) {
      weirdStatus = status;
      const r = await call(`${w.baseUrl}/ath/proxy/weird/anything`, { headers: { authorization: `Bearer ${f.accessToken}` } });
      expectError(r, "UPSTREAM_UNAVAILABLE");
      expect({ status, reason: (r.json.details as Record<string, unknown>).reason }).toEqual({ status, reason: "invalid_status" });
    }
    weirdStatus = "200";
    expect((await call(`${w.baseUrl}/ath/proxy/weird/anything`, { headers: { authorization: `Bearer ${f.accessToken}` } })).text).toBe("hi");
  });
});
