/**
 * ANY /ath/proxy/{provider_id}/{path} against a running `ath serve`, a real oidc-provider and an API that checks every
 * bearer token by introspection (DESIGN §3 "Proxy", §8): token states, provider and agent binding, scope_rules,
 * URL composition and traversal, header rules both ways, byte-exact compressed bodies, and upstream refresh. Every
 * refused request is also checked to have never reached the upstream.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { call, fullFlow } from "../helpers/agent.ts";
import { expectError } from "../helpers/expect-error.ts";
import { rawRequest } from "../helpers/raw-http.ts";
import { startWorld, type World } from "../helpers/world.ts";

let w: World;
let canary: ReturnType<typeof Bun.serve>;
const canaryHits: string[] = [];
let mail: Awaited<ReturnType<typeof fullFlow>>;
let rules: Awaited<ReturnType<typeof fullFlow>>;
let calendar: Awaited<ReturnType<typeof fullFlow>>;
let noapi: Awaited<ReturnType<typeof fullFlow>>;

beforeAll(async () => {
  canary = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: (req) => (canaryHits.push(req.url), new Response("canary")) });
  w = await startWorld();
  mail = await fullFlow(w.baseUrl, { provider_id: "mail", scopes: ["openid", "mail:read", "mail:send"] });
  rules = await fullFlow(w.baseUrl, { provider_id: "mailrules", scopes: ["mail:read"] });
  calendar = await fullFlow(w.baseUrl, { provider_id: "calendar", scopes: ["calendar:read"] });
  noapi = await fullFlow(w.baseUrl, { provider_id: "noapi", scopes: ["mail:read"] });
});
afterAll(async () => {
  await canary?.stop(true);
  await w?.stop();
});

const proxy = (path: string) => `${w.baseUrl}/ath/proxy/${path}`;
const bearer = (token: string, extra: Record<string, string> = {}) => ({ authorization: `Bearer ${token}`, ...extra });

/** Runs `fn` and asserts the upstream API (and the canary) received nothing meanwhile. */
async function upstreamUntouched<T>(fn: () => Promise<T>): Promise<T> {
  const before = w.api.requests.length;
  const canaryBefore = canaryHits.length;
  const result = await fn();
  expect(w.api.requests.slice(before)).toEqual([]);
  expect(canaryHits.length).toBe(canaryBefore);
  return result;
}

describe("Proxy — relaying", () => {
  test("a GET reaches api_base_url + path + the original query string with the upstream token, and the body is relayed", async () => {
    const before = w.api.requests.length;
    const r = await call(proxy("mail/v1/messages?limit=5&q=a%20b&x=%2F"), { headers: bearer(mail.accessToken) });
    expect(r.status).toBe(200);
    expect(r.json).toEqual({ messages: [{ id: "m1", subject: "hello" }], query: "?limit=5&q=a%20b&x=%2F" });
    const seen = w.api.requests.slice(before);
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({ method: "GET", path: "/v1/messages", query: "?limit=5&q=a%20b&x=%2F", active: true });
  });

  test("the upstream never sees the ATH token, cookies or X-ATH-* headers; other headers pass", async () => {
    const before = w.api.requests.length;
    const r = await call(proxy("mail/v1/echo"), {
      headers: bearer(mail.accessToken, { cookie: "ath_binding=abc; other=1", "x-ath-agent-id": mail.agent.agentId, "x-ath-debug": "1", "x-custom": "kept", "accept-language": "de" }),
    });
    expect(r.status).toBe(200);
    const seen = w.api.requests.slice(before)[0];
    expect(seen).toBeDefined();
    const raw = JSON.stringify(seen);
    expect(raw).not.toContain(mail.accessToken);
    expect(raw).not.toContain("ath_tk_");
    expect(seen?.headers.cookie).toBeUndefined();
    expect(Object.keys(seen?.headers ?? {}).filter((h) => h.startsWith("x-ath-"))).toEqual([]);
    expect(seen?.headers["x-custom"]).toBe("kept");
    expect(seen?.headers["accept-language"]).toBe("de");
    expect(seen?.headers.authorization).toMatch(/^Bearer /);
    expect(seen?.headers.host).toBe(new URL(w.api.baseUrl).host);
  });

  test("the upstream token never reaches the agent; Set-Cookie and X-ATH-* are stripped from the response", async () => {
    const before = w.api.requests.length;
    const r = await fetch(proxy("mail/v1/messages"), { headers: bearer(mail.accessToken) });
    const text = await r.text();
    const upstreamToken = (w.api.requests[before]?.headers.authorization ?? "").replace(/^Bearer /, "");
    expect(upstreamToken.length).toBeGreaterThan(10);
    expect(text).not.toContain(upstreamToken);
    r.headers.forEach((value) => expect(value).not.toContain(upstreamToken));
    expect(r.headers.get("set-cookie")).toBeNull();
    expect(r.headers.get("x-ath-error")).toBeNull(); // an upstream cannot pose as the gateway
    expect(r.headers.get("x-upstream")).toBe("sample-api");
  });

  test("a POST body is streamed to the upstream and its status relayed", async () => {
    const r = await call(proxy("mail/v1/messages"), { json: { to: "bob", subject: "hi ✓" }, headers: bearer(mail.accessToken) });
    expect(r.status).toBe(201);
    expect(r.json).toEqual({ received: { to: "bob", subject: "hi ✓" } });
  });

  test("upstream errors are relayed as they are (429 with Retry-After)", async () => {
    const r = await fetch(proxy("mail/v1/ratelimited"), { headers: bearer(mail.accessToken) });
    expect(r.status).toBe(429);
    expect(r.headers.get("retry-after")).toBe("7");
    expect(await r.json()).toEqual({ error: "slow down" });
  });

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

  test("api_base_url's path prefix is kept: /ath/proxy/calendar/echo reaches /v1/echo", async () => {
    const r = await call(proxy("calendar/echo?a=1"), { headers: bearer(calendar.accessToken) });
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ path: "/v1/echo", query: "?a=1" });
  });

  test("a provider without api_base_url answers 502 UPSTREAM_UNAVAILABLE naming the provider", async () => {
    const r = await upstreamUntouched(() => call(proxy("noapi/v1/messages"), { headers: bearer(noapi.accessToken) }));
    const e = expectError(r, "UPSTREAM_UNAVAILABLE");
    expect(`${e.message} ${JSON.stringify(e.details ?? {})}`).toContain("noapi");
  });
});

describe("Proxy — token states and binding", () => {
  test("a missing, malformed or unknown bearer token is 401 TOKEN_INVALID", async () => {
    for (const headers of [{}, { authorization: "Basic abc" }, { authorization: "Bearer " }, bearer("ath_tk_doesnotexist"), bearer(mail.accessToken.slice(0, -2))]) {
      expectError(await upstreamUntouched(() => call(proxy("mail/v1/messages"), { headers })), "TOKEN_INVALID");
    }
  });

  test("a token used for another provider is 403 PROVIDER_MISMATCH", async () => {
    expectError(await upstreamUntouched(() => call(proxy("calendar/echo"), { headers: bearer(mail.accessToken) })), "PROVIDER_MISMATCH");
  });

  test("X-ATH-Agent-ID is optional, but if sent must equal the bound agent (403 AGENT_IDENTITY_MISMATCH)", async () => {
    const ok = await call(proxy("mail/v1/messages"), { headers: bearer(mail.accessToken, { "x-ath-agent-id": mail.agent.agentId }) });
    expect(ok.status).toBe(200);
    const r = await upstreamUntouched(() => call(proxy("mail/v1/messages"), { headers: bearer(mail.accessToken, { "x-ath-agent-id": rules.agent.agentId }) }));
    expectError(r, "AGENT_IDENTITY_MISMATCH");
  });
});

describe("Proxy — scope_rules", () => {
  test("a request matching a rule of the token's scopes passes", async () => {
    expect((await call(proxy("mailrules/v1/messages"), { headers: bearer(rules.accessToken) })).status).toBe(200);
    expect((await call(proxy("mailrules/v1/messages/m1/attachments"), { headers: bearer(rules.accessToken) })).status).toBe(404);
  });

  test("a request no rule of the token's scopes allows is 403 SCOPE_NOT_APPROVED", async () => {
    expectError(await upstreamUntouched(() => call(proxy("mailrules/v1/messages"), { json: { to: "x" }, headers: bearer(rules.accessToken) })), "SCOPE_NOT_APPROVED");
    expectError(await upstreamUntouched(() => call(proxy("mailrules/v1/echo"), { headers: bearer(rules.accessToken) })), "SCOPE_NOT_APPROVED");
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
  for (const target of encoded) {
    test(`an encoded traversal ${target} is refused with 400 INVALID_REQUEST and nothing is forwarded`, async () => {
      const token = target.includes("/calendar/") ? calendar.accessToken : mail.accessToken;
      const r = await upstreamUntouched(() => rawRequest(w.gw.port, "GET", target, { authorization: `Bearer ${token}` }));
      expectError({ status: r.status, text: r.body, headers: r.headers }, "INVALID_REQUEST");
    });
  }

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

describe("Proxy — upstream 401", () => {
  test("when the upstream answers 401 once, the gateway refreshes the upstream token once and retries", async () => {
    const f = await fullFlow(w.baseUrl, { provider_id: "mail", scopes: ["mail:read"] });
    const headers = bearer(f.accessToken);
    const first = w.api.requests.length;
    expect((await call(proxy("mail/v1/messages"), { headers })).status).toBe(200);
    const upstreamToken = (w.api.requests[first]?.headers.authorization ?? "").replace(/^Bearer /, "");
    expect(await w.auth.revokeAccessToken(upstreamToken)).toBe(true);
    const refreshes = w.auth.count("grant.success:refresh_token");
    const before = w.api.requests.length;
    const r = await call(proxy("mail/v1/messages"), { headers });
    expect(r.status).toBe(200);
    expect(w.auth.count("grant.success:refresh_token")).toBe(refreshes + 1);
    expect(w.api.requests.slice(before).map((x) => x.active)).toEqual([false, true]);
  });
});
