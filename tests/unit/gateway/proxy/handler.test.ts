/**
 * ANY /ath/proxy/{provider_id}/{path} in process (DESIGN §3 "Proxy", §8): the ATH token swapped for the upstream
 * token, token states and binding, scope_rules, URL composition and encoded traversal, header rules both ways,
 * upstream answers relayed as they are (a 3xx never followed), and one refresh-and-retry after an upstream 401.
 * Every refused request is also checked to have never reached the upstream.
 * Each test runs twice (DESIGN §7): in gateway mode, and at /api/{path} of a native-mode gateway fronting the provider.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { fullFlow } from "../../../helpers/agent.ts";
import { expectError } from "../../../helpers/expect-error.ts";
import { BASE, type InProcess } from "../../../helpers/in-process.ts";
import { MODES, proxyTwins, type Twins } from "../../../helpers/proxy-twins.ts";
import type { ScriptedProvider } from "../../../helpers/scripted-provider.ts";

const CANARY = "http://canary.test";

for (const mode of MODES) describe(`${mode} mode`, () => {
/** Tests about several providers behind one gateway: gateway mode only (a native gateway fronts one app). */
const multiProvider = mode === "gateway" ? test : () => undefined;

let w: Twins;
let g: InProcess;
let p: ScriptedProvider;
let canaryHits: string[];
let mail: Awaited<ReturnType<typeof fullFlow>>;
let rules: Awaited<ReturnType<typeof fullFlow>>;
let calendar: Awaited<ReturnType<typeof fullFlow>>;
beforeEach(async () => {
  canaryHits = [];
  w = await proxyTwins(
    mode,
    (p) => ({
      mail: p.config({ available_scopes: ["openid", "mail:read", "mail:send"] }),
      mailrules: p.config({ scope_rules: { "mail:read": ["GET /v1/messages", "GET /v1/messages/**"], "mail:send": ["POST /v1/messages"] } }),
      calendar: p.config({ available_scopes: ["calendar:read"], api_base_url: `${p.origin}/api/v1` }),
      ...(mode === "gateway" ? { noapi: p.config({ api_base_url: undefined }) } : {}),
    }),
    { tokenTtlSeconds: 2, hosts: { [CANARY]: (req) => (canaryHits.push(req.url), new Response("canary")) } },
  );
  ({ p } = w);
  g = w.at("mail");
  mail = await fullFlow(g, { provider_id: "mail", scopes: ["openid", "mail:read", "mail:send"] });
  rules = await fullFlow(w.at("mailrules"), { provider_id: "mailrules", scopes: ["mail:read"] });
  calendar = await fullFlow(w.at("calendar"), { provider_id: "calendar", scopes: ["calendar:read"] });
});
afterEach(() => w.close());

const proxy = (path: string) => `${BASE}/ath/proxy/${path}`;
const bearer = (token: string, extra: Record<string, string> = {}) => ({ authorization: `Bearer ${token}`, ...extra });
const send = (url: string, init: Parameters<Twins["send"]>[1] = {}) => w.send(url, init);

/** Runs `fn` and asserts the upstream API (and the canary) received nothing meanwhile. */
async function upstreamUntouched<T>(fn: () => Promise<T>): Promise<T> {
  const before = p.api.length;
  const canaryBefore = canaryHits.length;
  const result = await fn();
  expect(p.api.slice(before)).toEqual([]);
  expect(canaryHits.length).toBe(canaryBefore);
  return result;
}

describe("Proxy — relaying", () => {
  test("a GET reaches api_base_url + path + the original query string with the upstream token, and the body is relayed", async () => {
    const before = p.api.length;
    const r = await send(proxy("mail/v1/messages?limit=5&q=a%20b&x=%2F"), { headers: bearer(mail.accessToken) });
    expect(r.status).toBe(200);
    expect(r.json).toEqual({ method: "GET", path: "/v1/messages", query: "?limit=5&q=a%20b&x=%2F", body: "" });
    const seen = p.api.slice(before);
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({ method: "GET", path: "/v1/messages", query: "?limit=5&q=a%20b&x=%2F", active: true });
  });

  test("the upstream never sees the ATH token, the agent's Host, cookies or X-ATH-* headers; other headers pass", async () => {
    const before = p.api.length;
    const r = await send(proxy("mail/v1/echo"), {
      headers: bearer(mail.accessToken, { host: "gateway.test", cookie: "ath_binding=abc; other=1", "x-ath-agent-id": mail.agent.agentId, "x-ath-debug": "1", "x-custom": "kept", "accept-language": "de" }),
    });
    expect(r.status).toBe(200);
    const seen = p.api.slice(before)[0];
    expect(seen).toBeDefined();
    const raw = JSON.stringify(seen);
    expect(raw).not.toContain(mail.accessToken);
    expect(raw).not.toContain("ath_tk_");
    expect(seen?.headers.cookie).toBeUndefined();
    expect(seen?.headers.host).toBeUndefined();
    expect(Object.keys(seen?.headers ?? {}).filter((h) => h.startsWith("x-ath-"))).toEqual([]);
    expect(seen?.headers["x-custom"]).toBe("kept");
    expect(seen?.headers["accept-language"]).toBe("de");
    expect(seen?.headers.authorization).toBe(`Bearer ${seen?.bearer}`);
  });

  test("the upstream token never reaches the agent; Set-Cookie and X-ATH-* are stripped from the response", async () => {
    p.routes.set("/v1/messages", (_req, seen) =>
      Response.json(
        { messages: [{ id: "m1" }] },
        { headers: { "set-cookie": "upstream_session=secret; Path=/", "x-ath-error": "TOKEN_REVOKED", "x-upstream": "scripted", "x-echo-token": String(seen.bearer) } },
      ),
    );
    const r = await w.fetch(proxy("mail/v1/messages").slice(BASE.length), { headers: bearer(mail.accessToken) });
    const text = await r.text();
    const upstreamToken = String(p.api.at(-1)?.bearer);
    expect(upstreamToken.length).toBeGreaterThan(10);
    expect(text).not.toContain(upstreamToken);
    expect(r.headers.get("set-cookie")).toBeNull();
    expect(r.headers.get("x-ath-error")).toBeNull(); // an upstream cannot pose as the gateway
    expect(r.headers.get("x-ath-upstream")).toBe("true"); // the gateway says the answer is the provider's (DESIGN §8)
    expect(r.headers.get("x-upstream")).toBe("scripted");
    // (this upstream echoes the token in a header of its own: relaying the API's own headers is the provider's business)
    expect(r.headers.get("authorization")).toBeNull();
  });

  test("a POST body is sent to the upstream and its status relayed", async () => {
    p.routes.set("/v1/messages", (_req, seen) => Response.json({ received: JSON.parse(seen.body) }, { status: 201 }));
    const r = await send(proxy("mail/v1/messages"), { json: { to: "bob", subject: "hi ✓" }, headers: bearer(mail.accessToken) });
    expect(r.status).toBe(201);
    expect(r.json).toEqual({ received: { to: "bob", subject: "hi ✓" } });
  });

  test("upstream errors are relayed as they are (429 with Retry-After), sent upstream once", async () => {
    p.routes.set("/v1/ratelimited", () => Response.json({ error: "slow down" }, { status: 429, headers: { "retry-after": "7" } }));
    const r = await w.fetch("/ath/proxy/mail/v1/ratelimited", { headers: bearer(mail.accessToken) });
    expect(r.status).toBe(429);
    expect(r.headers.get("retry-after")).toBe("7");
    expect(await r.json()).toEqual({ error: "slow down" });
    expect(p.to("/v1/ratelimited")).toHaveLength(1);
    expect(await g.audited("proxy.upstream_error")).toBe(1);
  });

  test("an upstream 3xx is relayed with its Location and never followed, so the upstream token never reaches the redirect target", async () => {
    p.routes.set("/anything", () => new Response(null, { status: 302, headers: { location: `${CANARY}/stolen` } }));
    const r = await w.fetch("/ath/proxy/mail/anything", { headers: bearer(mail.accessToken), redirect: "manual" });
    expect(r.status).toBe(302);
    expect(r.headers.get("location")).toBe(`${CANARY}/stolen`);
    expect(canaryHits).toEqual([]);
    const upstreamToken = String(p.to("/anything").at(-1)?.bearer);
    expect(upstreamToken.length).toBeGreaterThan(10);
    r.headers.forEach((value) => expect(value).not.toContain(upstreamToken));
  });

  test("api_base_url's path prefix is kept: /ath/proxy/calendar/echo reaches /v1/echo", async () => {
    const r = await send(proxy("calendar/echo?a=1"), { headers: bearer(calendar.accessToken) });
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ path: "/v1/echo", query: "?a=1" });
  });

  multiProvider("a provider without api_base_url answers 502 UPSTREAM_UNAVAILABLE naming the provider", async () => {
    const noapi = await fullFlow(g, { provider_id: "noapi", scopes: ["mail:read"] });
    const r = await upstreamUntouched(() => send(proxy("noapi/v1/messages"), { headers: bearer(noapi.accessToken) }));
    expectError(r, "UPSTREAM_UNAVAILABLE", { provider_id: "noapi" });
  });
});

describe("Proxy — header rules", () => {
  test("hop-by-hop headers, headers named in Connection, Proxy-Authorization, Forwarded and X-Forwarded-* are not forwarded", async () => {
    const before = p.api.length;
    const r = await send(proxy("mail/v1/echo"), {
      headers: bearer(mail.accessToken, {
        connection: "x-private-hop",
        "x-private-hop": "1",
        "proxy-authorization": "Basic c2VjcmV0",
        forwarded: "for=10.0.0.1;host=internal",
        "x-forwarded-for": "10.0.0.1",
        "x-forwarded-host": "internal.example",
        "x-forwarded-proto": "https",
        "keep-alive": "timeout=5",
        "x-kept": "yes",
      }),
    });
    expect(r.status).toBe(200);
    const seen = p.api.slice(before)[0]?.headers ?? {};
    for (const h of ["connection", "x-private-hop", "proxy-authorization", "forwarded", "x-forwarded-for", "x-forwarded-host", "x-forwarded-proto", "keep-alive"]) {
      expect({ [h]: seen[h] }).toEqual({ [h]: undefined });
    }
    expect(seen["x-kept"]).toBe("yes");
  });

  test("every forwarding and client-address header (X-Forwarded-*, X-Real-IP, X-Original-*, True-Client-IP…) is dropped toward the upstream", async () => {
    const forwarding = {
      "x-forwarded-prefix": "/admin",
      "x-forwarded-uri": "/admin/x",
      "x-forwarded-path": "/admin",
      "x-forwarded-method": "DELETE",
      "x-forwarded-port": "443",
      "x-forwarded-server": "internal",
      "x-forwarded-ssl": "on",
      "x-real-ip": "10.0.0.1",
      "x-client-ip": "10.0.0.1",
      "true-client-ip": "10.0.0.1",
      "cf-connecting-ip": "10.0.0.1",
      "x-cluster-client-ip": "10.0.0.1",
      "x-original-host": "internal.example",
      "x-rewrite-url": "/admin",
    };
    const before = p.api.length;
    const r = await send(proxy("mail/v1/echo"), { headers: bearer(mail.accessToken, { ...forwarding, "x-kept": "yes" }) });
    expect(r.status).toBe(200);
    const seen = p.api.slice(before)[0]?.headers ?? {};
    expect(Object.keys(seen).filter((h) => h in forwarding)).toEqual([]);
    expect(seen["x-kept"]).toBe("yes");
  });

  test("forwarding and hop-by-hop headers in the upstream's answer do not reach the agent either", async () => {
    p.routes.set("/v1/leaky", () =>
      Response.json({ ok: true }, { headers: { "x-forwarded-for": "10.1.2.3", "x-real-ip": "10.1.2.3", forwarded: "for=10.1.2.3", "keep-alive": "timeout=5", "x-kept": "yes" } }),
    );
    const r = await send(proxy("mail/v1/leaky"), { headers: bearer(mail.accessToken) });
    expect(r.status).toBe(200);
    expect(["x-forwarded-for", "x-real-ip", "forwarded", "keep-alive"].filter((h) => r.headers.has(h))).toEqual([]);
    expect(r.headers.get("x-kept")).toBe("yes");
  });

  test("method- and URL-override headers never reach the upstream (they would re-route a request scope_rules allowed)", async () => {
    const overrides = {
      "x-http-method-override": "DELETE",
      "x-http-method": "DELETE",
      "x-method-override": "DELETE",
      "x-original-url": "/v1/admin",
      "x-rewrite-url": "/v1/admin",
      "x-original-method": "DELETE",
    };
    const before = p.api.length;
    const r = await send(proxy("mailrules/v1/messages"), { headers: bearer(rules.accessToken, overrides) });
    expect(r.status).toBe(200);
    const seen = p.api.slice(before);
    expect(seen.map((s) => s.method)).toEqual(["GET"]);
    for (const h of Object.keys(overrides)) expect({ [h]: seen[0]?.headers[h] }).toEqual({ [h]: undefined });
  });
});

describe("Proxy — token states and binding", () => {
  test("a missing, malformed or unknown bearer token is 401 TOKEN_INVALID", async () => {
    for (const headers of [{}, { authorization: "Basic abc" }, { authorization: "Bearer " }, bearer("ath_tk_doesnotexist"), bearer(mail.accessToken.slice(0, -2))]) {
      const r = await upstreamUntouched(() => send(proxy("mail/v1/messages"), { headers }));
      expectError(r, "TOKEN_INVALID");
      expect(r.headers.get("x-ath-upstream")).toBeNull(); // the gateway's own answer
    }
  });

  multiProvider("an unknown provider in the proxy path with no token is 401 TOKEN_INVALID, never a 500", async () => {
    expectError(await upstreamUntouched(() => send(proxy("nosuch/v1/x"))), "TOKEN_INVALID");
  });

  multiProvider("a token used for another provider is 403 PROVIDER_MISMATCH", async () => {
    expectError(await upstreamUntouched(() => send(proxy("calendar/echo"), { headers: bearer(mail.accessToken) })), "PROVIDER_MISMATCH", { token_provider_id: "mail" });
  });

  test("X-ATH-Agent-ID is optional, but if sent must equal the bound agent (403 AGENT_IDENTITY_MISMATCH)", async () => {
    expect((await send(proxy("mail/v1/messages"), { headers: bearer(mail.accessToken, { "x-ath-agent-id": mail.agent.agentId }) })).status).toBe(200);
    const r = await upstreamUntouched(() => send(proxy("mail/v1/messages"), { headers: bearer(mail.accessToken, { "x-ath-agent-id": rules.agent.agentId }) }));
    expectError(r, "AGENT_IDENTITY_MISMATCH");
  });

  test("a token past its expires_in is refused with 401 TOKEN_EXPIRED on the gateway's clock, and nothing is forwarded", async () => {
    expect(mail.token.json.expires_in).toBe(2);
    g.clock.advance(1);
    expect((await send(proxy("mail/v1/messages"), { headers: bearer(mail.accessToken) })).status).toBe(200);
    g.clock.advance(1);
    expectError(await upstreamUntouched(() => send(proxy("mail/v1/messages"), { headers: bearer(mail.accessToken) })), "TOKEN_EXPIRED");
  });
});

describe("Proxy — scope_rules", () => {
  test("a request matching a rule of the token's scopes passes", async () => {
    expect((await send(proxy("mailrules/v1/messages"), { headers: bearer(rules.accessToken) })).status).toBe(200);
    expect((await send(proxy("mailrules/v1/messages/m1/attachments"), { headers: bearer(rules.accessToken) })).status).toBe(200);
    expect(p.api.map((r) => `${r.method} ${r.path}`).slice(-2)).toEqual(["GET /v1/messages", "GET /v1/messages/m1/attachments"]);
  });

  test("a request no rule of the token's scopes allows is 403 SCOPE_NOT_APPROVED", async () => {
    expectError(await upstreamUntouched(() => send(proxy("mailrules/v1/messages"), { json: { to: "x" }, headers: bearer(rules.accessToken) })), "SCOPE_NOT_APPROVED", { scopes: ["mail:read"] });
    expectError(await upstreamUntouched(() => send(proxy("mailrules/v1/echo"), { headers: bearer(rules.accessToken) })), "SCOPE_NOT_APPROVED");
  });
});

describe("Proxy — path traversal", () => {
  test("encoded traversals (%2f, %5c, %2e%2e%2f) are refused with 400 INVALID_REQUEST naming the path, and nothing is forwarded", async () => {
    const targets: [string, string][] = [
      ["mail", "/ath/proxy/mail/v1/..%2f..%2fadmin"],
      ["mail", "/ath/proxy/mail/v1/%2e%2e%2fsecret"],
      ["mail", "/ath/proxy/mail/v1/%2E%2E%2Fsecret"],
      ["mail", "/ath/proxy/mail/v1/%5c..%5cx"],
      ["mail", "/ath/proxy/mail/v1/..%5cx"],
      ["calendar", "/ath/proxy/calendar/..%2fmessages"],
      ["calendar", "/ath/proxy/calendar/%2e%2e%2f%2e%2e%2fadmin"],
    ];
    for (const [provider, target] of targets) {
      expect(new URL(BASE + target).pathname).toBe(target); // the request-target reaches the gateway as sent
      const token = provider === "calendar" ? calendar.accessToken : mail.accessToken;
      const r = await upstreamUntouched(() => send(BASE + target, { headers: bearer(token) }));
      expectError(r, "INVALID_REQUEST", { field: "path" });
    }
  });

  test("a path scope_rules allow only through a `..;` segment is refused, not forwarded for the upstream to normalise", async () => {
    // rule: mail:read → GET /v1/messages/**; Tomcat/Jetty/Spring read /v1/messages/..;/echo as /v1/echo
    const r = await upstreamUntouched(() => send(`${BASE}/ath/proxy/mailrules/v1/messages/..;/echo`, { headers: bearer(rules.accessToken) }));
    expectError(r, "INVALID_REQUEST", { field: "path" });
  });
});

describe("Proxy — upstream 401", () => {
  test("when the upstream answers 401 once, the gateway refreshes the upstream token once and retries", async () => {
    expect((await send(proxy("mail/v1/messages"), { headers: bearer(mail.accessToken) })).status).toBe(200);
    p.expireAccessTokens();
    const refreshes = p.grants("refresh_token").length;
    const before = p.api.length;
    const r = await send(proxy("mail/v1/messages"), { headers: bearer(mail.accessToken) });
    expect(r.status).toBe(200);
    expect(p.grants("refresh_token")).toHaveLength(refreshes + 1);
    expect(p.api.slice(before).map((x) => x.active)).toEqual([false, true]);
    expect(await g.audited("upstream.refreshed")).toBe(1);
  });
});
});
