/**
 * POST /oauth/register (RFC 7591) through HTTP, in process, as the hardening round found it (issue 35, findings 8 and
 * 10): redirect URIs follow OAuth 2.1 (https; http only to this machine's loopback; no userinfo, no fragment, no
 * control characters or spaces; no web or script schemes — a native app's private-use scheme is fine), under `--dev`
 * too; a client whose every redirect URI is on this machine — IPv4-mapped loopback included — is named so on the
 * consent page; registrations are limited per client IP as `ath serve` limits them by default; a client that never
 * completes an authorization is swept after `--sweep-retention`, one that did is kept.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { resolveServeOptions } from "../../../../src/gateway/options.ts";
import { sweepOnce } from "../../../../src/gateway/ops/sweeper.ts";
import { call, type HttpResult } from "../../../helpers/agent.ts";
import { Browser } from "../../../helpers/browser.ts";
import { BASE, scriptedGateway, type InProcess, type InProcessOptions } from "../../../helpers/in-process.ts";
import { MCP_REDIRECT, mcpCode, PROVIDER } from "../../../helpers/refresh-doors.ts";

let g: InProcess;
afterEach(() => g?.close());
const start = async (o: InProcessOptions = {}) => {
  ({ g } = await scriptedGateway((p) => ({ [PROVIDER]: p.config({ mcp: { url: `${p.origin}/api/mcp` } }) }), o));
};
const registerWith = (redirect_uris: string[], headers: Record<string, string> = {}) =>
  call(`${BASE}/oauth/register`, { json: { client_name: "Test", redirect_uris, token_endpoint_auth_method: "none" }, headers, fetch: g.fetch });

function expectRefusedUri(r: HttpResult, uri: string) {
  expect({ uri, status: r.status, error: r.json.error }).toEqual({ uri, status: 400, error: "invalid_redirect_uri" });
}

describe("POST /oauth/register — redirect URIs (OAuth 2.1 §2.3.1, RFC 8252 §7)", () => {
  test("plain http to another machine, userinfo, a fragment, control characters, spaces and web or script schemes are invalid_redirect_uri — under --dev too; nothing is registered", async () => {
    await start();
    const refused = [
      "http://app.example/cb",
      "http://192.168.1.10/cb",
      "http://0.0.0.0:8080/cb",
      "https://user:pass@app.example/cb",
      "https://trusted.example@evil.example/cb",
      "https://@app.example/cb",
      "https://app.example/cb#",
      "https://app.example/cb#frag",
      "https://app.example/cb\r\nSet-Cookie: a=b",
      "https://app.example/c\nb",
      "https://app.example/c\tb",
      "https://app.example/c b",
      "https://app.example/cb\u007f",
      "javascript:alert(1)",
      "data:text/html,hi",
      "file:///etc/passwd",
      "vbscript:msgbox",
      "blob:https://app.example/x",
      "ws://127.0.0.1/cb",
      "ftp://app.example/cb",
      "not a uri",
    ];
    for (const uri of refused) expectRefusedUri(await registerWith([uri]), uri);
    // NUL anywhere in a JSON body is refused before the metadata is read (http/request.ts)
    expect((await registerWith(["https://app.example/cb\u0000"])).json.error).toBe("invalid_request");
    // one bad URI among good ones refuses the registration
    expectRefusedUri(await registerWith(["https://app.example/cb", "http://app.example/cb"]), "mixed");
    expect(await g.audited("mcp.client_registered")).toBe(0);
  });

  test("https anywhere, http to this machine's loopback (any form), and a native app's private-use scheme are registered", async () => {
    await start();
    const accepted = [
      "https://app.example/cb",
      "https://app.example:8443/cb?x=1",
      "http://127.0.0.1:33418/callback",
      "http://127.0.0.2/cb",
      "http://[::1]:8080/cb",
      "http://[::ffff:127.0.0.1]:8080/cb",
      "http://localhost:3000/cb",
      "http://app.localhost/cb",
      "cursor://anysphere.cursor-mcp/oauth/callback",
      "com.example.app:/oauth2redirect",
    ];
    for (const uri of accepted) expect({ uri, status: (await registerWith([uri])).status }).toEqual({ uri, status: 201 });
  });
});

describe("the consent page names a client that runs on the person's own machine", () => {
  test("every loopback form — 127.0.0.1, 127.0.0.2, [::1], IPv4-mapped [::ffff:127.0.0.1], localhost — gets the warning; an https client does not", async () => {
    await start();
    const warning = "This client runs on your own computer";
    for (const [uri, warned] of [
      ["http://127.0.0.1:33418/cb", true],
      ["http://127.0.0.2:33418/cb", true],
      ["http://[::1]:33418/cb", true],
      ["http://[::ffff:127.0.0.1]:33418/cb", true],
      ["http://localhost:33418/cb", true],
      ["https://app.example/cb", false],
    ] as const) {
      const reg = await registerWith([uri]);
      expect(reg.status).toBe(201);
      const url = new URL(`${BASE}/oauth/authorize`);
      const params = { response_type: "code", client_id: String(reg.json.client_id), redirect_uri: uri, code_challenge: "c".repeat(43), code_challenge_method: "S256", resource: `${BASE}/mcp/${PROVIDER}` };
      for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
      const page = await new Browser((req) => g.fetch(req)).navigate(url.href);
      expect({ uri, status: page.status, path: new URL(page.url).pathname.split("/").slice(0, 3).join("/") }).toEqual({ uri, status: 200, path: "/ath/consent" });
      expect({ uri, warned: page.body.includes(warning) }).toEqual({ uri, warned });
    }
  });
});

describe("registration limits and sweeping (issue 35, finding 8)", () => {
  test("registrations are limited per client IP as `ath serve` limits them by default (20 a minute): the 21st is 429, another IP still registers", async () => {
    const { rateLimits } = resolveServeOptions({}, { ATH_HOME: "/tmp/ath-register-test" });
    expect(rateLimits.register).toEqual({ limit: 20, windowMs: 60_000 });
    await start({ rateLimits, trustProxy: true });
    const from = (ip: string) => registerWith([MCP_REDIRECT], { "x-forwarded-for": ip });
    for (let i = 0; i < 20; i++) expect((await from("198.51.100.1")).status).toBe(201);
    const refused = await from("198.51.100.1");
    expect(refused.status).toBe(429);
    expect(refused.headers.get("retry-after")).toMatch(/^\d+$/);
    // in OAuth's words, as every error at /oauth/* (DESIGN §18)
    expect(refused.json).toMatchObject({ error: "temporarily_unavailable" });
    expect((await from("198.51.100.2")).status).toBe(201);
    expect(await g.audited("mcp.client_registered")).toBe(21);
  });

  test("a client that never completed an authorization is swept after --sweep-retention, with what its started authorization made; one that did is kept and keeps refreshing", async () => {
    await start();
    const retentionMs = 24 * 3600 * 1000;
    const idle = await registerWith([MCP_REDIRECT]);
    const started = await mcpCode({ baseUrl: BASE, fetch: (req) => g.fetch(req) }); // consented, code never exchanged
    const used = await mcpCode({ baseUrl: BASE, fetch: (req) => g.fetch(req) });
    const tokens = await call(`${BASE}/oauth/token`, {
      form: { grant_type: "authorization_code", code: used.code, code_verifier: used.verifier, client_id: used.clientId, redirect_uri: MCP_REDIRECT },
      fetch: g.fetch,
    });
    expect(tokens.status).toBe(200);
    g.clock.advance(retentionMs / 1000 - 60);
    expect((await sweepOnce(g.gw, { retentionMs, auditRetentionMs: 90 * retentionMs })).mcp_clients).toBe(0);
    g.clock.advance(120);
    const swept = await sweepOnce(g.gw, { retentionMs, auditRetentionMs: 90 * retentionMs });
    expect(swept.mcp_clients).toBe(2);
    for (const id of [String(idle.json.client_id), started.clientId]) {
      expect(await g.gw.store.getMcpClient(id)).toBeNull();
      expect(await g.gw.store.getAgentByClientId(id)).toBeNull();
    }
    const late = await call(`${BASE}/oauth/token`, {
      form: { grant_type: "authorization_code", code: started.code, code_verifier: started.verifier, client_id: started.clientId },
      fetch: g.fetch,
    });
    expect({ status: late.status, error: late.json.error }).toEqual({ status: 401, error: "invalid_client" });
    const refreshed = await call(`${BASE}/oauth/token`, {
      form: { grant_type: "refresh_token", refresh_token: String(tokens.json.refresh_token), client_id: used.clientId },
      fetch: g.fetch,
    });
    expect(refreshed.status).toBe(200);
  });
});
