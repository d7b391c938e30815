/**
 * The MCP front door (DESIGN §18) for real: `ath serve` in front of an MCP server built with the official SDK that
 * takes only tokens of a real OAuth server (oidc-provider); the official SDK client (Streamable HTTP + its OAuth
 * client provider) discovers ath from the 401, registers (dynamically, or by a client ID metadata document), and a
 * person consents in Chromium on ath's page, then at the upstream. Two people on one URL reach the upstream with their
 * own tokens; a token for another resource is refused; a call lacking scope gets the step-up 403; a call a person
 * denied is a JSON-RPC error that never reaches the upstream; an approved call runs exactly once.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { UrlElicitationRequiredError } from "@modelcontextprotocol/sdk/types.js";
import type { Browser, Page } from "playwright-core";
import { closeContexts, freshPage, screenshots, sharedChromium } from "../helpers/chromium.ts";
import { startGateway, type Gateway } from "../helpers/gateway.ts";
import { MemoryOAuthProvider, mcpClient, startClientHost } from "../helpers/mcp-oauth-client.ts";
import { freePort } from "../helpers/net.ts";
import { clickAndWait } from "../helpers/person.ts";
import { startUpstreamAuth, type UpstreamAuth } from "../helpers/upstream-auth.ts";
import { mailMcpProvider, startUpstreamMcp, type UpstreamMcp } from "../helpers/upstream-mcp.ts";

const SCOPES = ["openid", "offline_access", "mail:read", "mail:send"];

let auth: UpstreamAuth;
let upstream: UpstreamMcp;
let gw: Gateway;
let host: Awaited<ReturnType<typeof startClientHost>>;
let browser: Browser;
let base: string;
/** A hostile hop in front of the upstream (issue 35): on `x-hostile` it redirects, or never ends a list answer. */
let hostile: Hostile;
/** The provider's REST API beside its MCP server (issue 35 #2): what reached it. */
let api: { url: string; hits: string[]; stop(): void };

beforeAll(async () => {
  // the test's own servers first: a port they take cannot be the gateway's, chosen next
  hostile = startHostile(() => upstream.url);
  api = startApi();
  const port = await freePort();
  auth = await startUpstreamAuth({ redirectUris: [`http://127.0.0.1:${port}/ath/callback`], scopes: SCOPES });
  upstream = await startUpstreamMcp(auth);
  host = await startClientHost();
  const mailServer = {
    ...mailMcpProvider(auth, upstream, SCOPES),
    scope_rules: {
      "mail:read": ["MCP tools/call whoami", "MCP tools/call read_mail", "MCP tools/call delete_all", "MCP tools/call count_mail"],
      "mail:send": ["MCP tools/call send_email", "MCP tools/call forward_mail"],
    },
    approval_rules: [{ match: ["MCP tools/call send_email"], approver: "user" as const }],
    budgets: [{ match: ["MCP tools/call count_mail"], per: "agent_user" as const, limit: 2, window: "1d" as const }],
    // Policy in MCP terms (CEL over the call's arguments): compiled at the start, so the gateway starting proves `mcp` is known.
    policy: [
      { match: ["MCP tools/call delete_all"], action: "deny" as const, reason: "Nobody deletes every mail through ath" },
      { match: ["MCP tools/call read_mail"], when: 'has(mcp.arguments.folder) && mcp.arguments.folder == "secret"', action: "deny" as const, reason: "The secret folder is off limits" },
      { match: ["MCP tools/call *"], when: 'mcp.tool == "forward_mail" && !mcp.arguments.to.endsWith("@example.com")', action: "approve" as const },
    ],
  };
  // MCP clients' refresh families obey --refresh-idle/--refresh-ttl like agents' (DESIGN §17)
  // a provider whose MCP server is behind a hostile hop, with its REST API beside it (issue 35 #2, #7, #13)
  const hostileServer = { ...mailServer, display_name: "Hostile (MCP)", mcp: { url: hostile.url }, api_base_url: api.url, scope_rules: undefined, approval_rules: undefined, budgets: undefined, policy: undefined };
  gw = await startGateway({ binary: true, port, providers: { mail: mailServer, other: { ...mailServer, display_name: "Other (MCP)" }, hostile: { ...hostileServer, scope_rules: { "mail:read": ["MCP tools/call *"] } } }, extraArgs: ["--refresh-idle", "86400", "--refresh-ttl", "90000"] });
  base = gw.baseUrl;
  browser = await sharedChromium();
});

afterAll(async () => {
  await closeContexts(browser);
  await gw?.cleanup();
  await host?.stop();
  await upstream?.stop();
  hostile?.stop();
  api?.stop();
  await auth?.stop();
});

interface Hostile {
  url: string;
  /** Bytes of never-ending answers sent so far, and whether one is still being sent. */
  sent: number;
  sending: boolean;
  stop(): void;
}

/** Forwards to the upstream; `x-hostile: redirect` → 307 to another origin, `endless-sse` / `endless-json` → a list answer that never ends. */
function startHostile(target: () => string): Hostile {
  const h: Hostile = { url: "", sent: 0, sending: false, stop: () => server.stop(true) };
  const chunk = new TextEncoder().encode("x".repeat(64 * 1024));
  const endless = (prefix: string, type: string) =>
    new Response(
      new ReadableStream<Uint8Array>({
        start(c) {
          h.sending = true;
          c.enqueue(new TextEncoder().encode(prefix));
        },
        pull(c) {
          h.sent += chunk.byteLength;
          c.enqueue(chunk);
        },
        cancel() {
          h.sending = false;
        },
      }),
      { headers: { "content-type": type } },
    );
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(req) {
      const how = req.headers.get("x-hostile");
      if (how === "redirect") return new Response(null, { status: 307, headers: { location: "http://127.0.0.1:9/steal" } });
      if (how === "endless-sse") return endless('event: message\ndata: {"jsonrpc":"2.0","id":7,"result":{"tools":[{"name":"', "text/event-stream");
      if (how === "endless-json") return endless('{"jsonrpc":"2.0","id":7,"result":{"tools":[{"name":"', "application/json");
      const headers = new Headers(req.headers);
      headers.delete("host");
      return fetch(target(), { method: req.method, headers, body: req.body, decompress: false, duplex: "half", signal: req.signal } as RequestInit);
    },
  });
  h.url = `http://127.0.0.1:${server.port}/mcp`;
  return h;
}

function startApi() {
  const hits: string[] = [];
  const server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: (req) => (hits.push(`${req.method} ${new URL(req.url).pathname}`), Response.json({ ok: true })) });
  return { url: `http://127.0.0.1:${server.port}`, hits, stop: () => server.stop(true) };
}

/** The person's part: ath's consent page (checked), Approve, then the upstream's page as `login`, granting `scopes`. */
async function consent(page: Page, url: URL, o: { login: string; scopes?: string[]; expect: RegExp; screenshot?: string }): Promise<void> {
  await page.goto(url.href);
  expect(new URL(page.url()).pathname.startsWith("/ath/consent/")).toBe(true);
  expect(await page.locator("main, body").first().innerText()).toMatch(o.expect);
  if (o.screenshot) await screenshots(page, o.screenshot);
  await clickAndWait(page, "Approve");
  expect(new URL(page.url()).pathname.startsWith("/interaction/")).toBe(true);
  await page.locator('input[name="login"]').fill(o.login);
  if (o.scopes) await page.locator('input[name="scopes"]').evaluate((el, v) => ((el as HTMLInputElement).value = v), o.scopes.join(" "));
  await clickAndWait(page, "Approve");
}

/** The SDK client's whole journey: 401 → discovery → registration → consent in Chromium → code → tokens → connected. */
async function connectAs(page: Page, provider: MemoryOAuthProvider, login: string, o: { scopes?: string[]; expect: RegExp; path?: string; screenshot?: string } = { expect: /./ }) {
  const url = `${base}/mcp/${o.path ?? "mail"}`;
  const first = mcpClient(url, provider);
  await expect(first.client.connect(first.transport)).rejects.toBeInstanceOf(UnauthorizedError);
  expect(provider.authorizationUrl?.href.startsWith(`${base}/oauth/authorize?`)).toBe(true);
  const before = host.landings.length;
  await consent(page, provider.authorizationUrl!, { login, scopes: o.scopes, expect: o.expect, screenshot: o.screenshot });
  const landing = host.landings[before]!;
  expect(landing.iss).toBe(base);
  expect(landing.code).toStartWith("mcp_code_");
  await first.transport.finishAuth(landing.code!);
  const second = mcpClient(url, provider);
  await second.client.connect(second.transport);
  return second.client;
}

async function rpc(token: string, body: unknown, path = "mail", session?: string): Promise<Response> {
  return fetch(`${base}/mcp/${path}`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${token}`,
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      ...(session ? { "mcp-session-id": session, "mcp-protocol-version": "2025-11-25" } : {}),
    },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

/** A session of our own at the upstream through ath, for the raw JSON-RPC calls below. */
async function session(token: string): Promise<string> {
  const res = await rpc(token, { jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "raw", version: "1" } } });
  expect(res.status).toBe(200);
  const id = res.headers.get("mcp-session-id");
  await res.body?.cancel();
  expect(id).toBeTruthy();
  await (await rpc(token, { jsonrpc: "2.0", method: "notifications/initialized" }, "mail", id!)).body?.cancel();
  return id!;
}

/** A tools/call's JSON-RPC answer, whether it came as JSON or as an SSE event. */
async function answer(res: Response): Promise<{ result?: { content: { text: string }[] }; error?: { code: number; message: string; data?: Record<string, string> } }> {
  const text = await res.text();
  if ((res.headers.get("content-type") ?? "").includes("text/event-stream")) {
    const data = text.split("\n").filter((l) => l.startsWith("data: ")).map((l) => l.slice(6));
    return JSON.parse(data.at(-1)!);
  }
  return JSON.parse(text);
}

let aliceToken = "";
let aliceRefresh = "";
let bobToken = "";
let alicePage: Page;
let provider0ClientId = "";

describe("discovery", () => {
  test("a request without a token gets the RFC 9728 challenge; the documents name ath as the authorization server, the resource's scopes without offline_access", async () => {
    const res = await fetch(`${base}/mcp/mail`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
    expect(res.status).toBe(401);
    const challenge = res.headers.get("www-authenticate")!;
    // MCP 2026-07-28 (DESIGN §21): the resource no longer advertises offline_access; the authorization server still does
    const advertised = SCOPES.filter((s) => s !== "offline_access");
    expect(challenge).toContain(`resource_metadata="${base}/.well-known/oauth-protected-resource/mcp/mail"`);
    expect(challenge).toContain(`scope="${advertised.join(" ")}"`);
    const prm = await (await fetch(`${base}/.well-known/oauth-protected-resource/mcp/mail`)).json();
    expect(prm).toMatchObject({ resource: `${base}/mcp/mail`, authorization_servers: [base], scopes_supported: advertised });
    for (const path of ["/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"]) {
      const as = await (await fetch(base + path)).json();
      expect(as).toMatchObject({
        issuer: base,
        authorization_endpoint: `${base}/oauth/authorize`,
        token_endpoint: `${base}/oauth/token`,
        registration_endpoint: `${base}/oauth/register`,
        code_challenge_methods_supported: ["S256"],
        client_id_metadata_document_supported: true,
        authorization_response_iss_parameter_supported: true,
      });
    }
    expect(upstream.requests.length).toBe(0);
  });

  test("/oauth/* errors are OAuth's", async () => {
    const bad = await fetch(`${base}/oauth/register`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ redirect_uris: ["javascript:alert(1)"] }) });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ error: "invalid_redirect_uri" });
    const token = await fetch(`${base}/oauth/token`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: "grant_type=authorization_code&client_id=mcp_nobody&code=x&code_verifier=" + "a".repeat(43) });
    expect(token.status).toBe(401);
    expect(await token.json()).toMatchObject({ error: "invalid_client" });
    const page = await fetch(`${base}/oauth/authorize?client_id=mcp_nobody&redirect_uri=https://evil.example/cb`, { redirect: "manual" });
    expect(page.status).toBe(400);
    expect(page.headers.get("location")).toBeNull();
  });
});

describe("the SDK client's journey, two people on one URL", () => {
  test("Alice: dynamic registration, ath's consent page names the client (localhost warning), her own upstream token", async () => {
    ({ page: alicePage } = await freshPage(browser));
    const provider = new MemoryOAuthProvider(host.redirectUrl);
    const client = await connectAs(alicePage, provider, "alice", { expect: /Test MCP Client[\s\S]*127\.0\.0\.1[\s\S]*runs on your own computer/, screenshot: "mcp-consent" });
    expect(provider.info?.client_id).toStartWith("mcp_");
    provider0ClientId = provider.info!.client_id;
    const tools = await client.listTools();
    // delete_all, refused by a policy whatever its arguments, is not listed; forward_mail (approval when it leaves
    // example.com) and send_email (a scope Alice may lack) are
    expect(tools.tools.map((t) => t.name).sort()).toEqual(["count_mail", "forward_mail", "read_mail", "send_email", "whoami"]);
    const who = await client.callTool({ name: "whoami", arguments: {} });
    expect((who.content as { text: string }[])[0]!.text).toBe("alice");
    // The upstream saw the person's upstream token, never ath's.
    const seen = upstream.requests.filter((r) => r.active);
    expect(seen.length).toBeGreaterThan(0);
    expect(seen.every((r) => !r.authorization!.includes("ath_tk_"))).toBe(true);
    expect(seen.some((r) => r.sessionId !== null && r.protocolVersion !== null)).toBe(true);
    aliceToken = provider.saved!.access_token;
    aliceRefresh = provider.saved!.refresh_token!;
    expect(aliceToken).toStartWith("ath_tk_");
    await client.close();
  });

  test("Bob: a client ID metadata document, only mail:read granted; the same URL reaches the upstream as Bob", async () => {
    // The SDK takes metadata-document client ids over https only; ath (under --dev) takes loopback http too. The
    // code grant is run here by hand, exactly as the SDK would run it, and the SDK client then uses its tokens.
    const { page } = await freshPage(browser);
    const verifier = "v".repeat(20) + crypto.randomUUID().replaceAll("-", "");
    const challenge = new Bun.CryptoHasher("sha256").update(verifier).digest("base64url");
    const authorizeUrl = new URL(`${base}/oauth/authorize`);
    for (const [k, v] of Object.entries({ response_type: "code", client_id: host.documentUrl, redirect_uri: host.redirectUrl, code_challenge: challenge, code_challenge_method: "S256", state: "bob-state", resource: `${base}/mcp/mail` })) {
      authorizeUrl.searchParams.set(k, v);
    }
    const before = host.landings.length;
    await consent(page, authorizeUrl, { login: "bob", scopes: ["openid", "offline_access", "mail:read"], expect: /Published at its client id[\s\S]*Documented MCP Client/ });
    const landing = host.landings[before]!;
    expect(landing).toMatchObject({ state: "bob-state", iss: base, error: null });
    const exchange = await fetch(`${base}/oauth/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ grant_type: "authorization_code", code: landing.code!, code_verifier: verifier, client_id: host.documentUrl, redirect_uri: host.redirectUrl, resource: `${base}/mcp/mail` }).toString(),
    });
    expect(exchange.status).toBe(200);
    const tokens = (await exchange.json()) as { access_token: string; refresh_token: string; scope: string; token_type: string };
    expect(tokens.scope.split(" ")).not.toContain("mail:send");
    // A code is spent by its first exchange.
    const replay = await fetch(`${base}/oauth/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ grant_type: "authorization_code", code: landing.code!, code_verifier: verifier, client_id: host.documentUrl }).toString(),
    });
    expect(await replay.json()).toMatchObject({ error: "invalid_grant" });

    const provider = new MemoryOAuthProvider(host.redirectUrl);
    provider.info = { client_id: host.documentUrl };
    provider.saved = tokens;
    const { client, transport } = mcpClient(`${base}/mcp/mail`, provider);
    await client.connect(transport);
    const who = await client.callTool({ name: "whoami", arguments: {} });
    expect((who.content as { text: string }[])[0]!.text).toBe("bob");
    bobToken = tokens.access_token;
    await client.close();
    expect(upstream.calls.filter((c) => c.tool === "whoami").map((c) => c.sub)).toEqual(["alice", "bob"]);
  });
});

describe("the resource server", () => {
  test("a token for another resource is refused with invalid_token, and reaches nothing", async () => {
    const before = upstream.requests.length;
    const res = await rpc(aliceToken, { jsonrpc: "2.0", id: 1, method: "ping" }, "other");
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toContain('error="invalid_token"');
    expect(res.headers.get("www-authenticate")).toContain("/.well-known/oauth-protected-resource/mcp/other");
    expect(upstream.requests.length).toBe(before);
  });

  test("a call the token lacks scope for gets the step-up 403 naming every scope it needs", async () => {
    const id = await session(bobToken);
    const before = upstream.calls.length;
    const res = await rpc(bobToken, { jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "send_email", arguments: { to: "x@example.com", text: "hi" } } }, "mail", id);
    expect(res.status).toBe(403);
    const challenge = res.headers.get("www-authenticate")!;
    expect(challenge).toContain('error="insufficient_scope"');
    expect(challenge).toMatch(/scope="[^"]*mail:send[^"]*"/);
    expect(challenge).toMatch(/scope="[^"]*mail:read[^"]*"/);
    expect(upstream.calls.length).toBe(before);
  });
});

describe("hostile upstreams and crossed doors (issue 35)", () => {
  let evilToken = "";
  beforeAll(async () => {
    const { page } = await freshPage(browser);
    const provider = new MemoryOAuthProvider(host.redirectUrl);
    const client = await connectAs(page, provider, "alice", { expect: /Hostile/, path: "hostile" });
    await client.close();
    evilToken = provider.saved!.access_token;
  });

  test("an MCP client's token does not open the provider's REST API at /ath/proxy: 401, nothing reaches the API", async () => {
    for (const method of ["GET", "POST", "DELETE"]) {
      const res = await fetch(`${base}/ath/proxy/hostile/v1/messages`, { method, headers: { authorization: `Bearer ${evilToken}`, "content-type": "application/json" }, ...(method === "POST" ? { body: "{}" } : {}) });
      expect({ method, status: res.status, code: res.headers.get("x-ath-error") }).toEqual({ method, status: 401, code: "TOKEN_INVALID" });
    }
    expect(api.hits).toEqual([]);
  });

  test("an upstream's redirect is never followed nor relayed: 502, no Location reaches the client", async () => {
    const res = await fetch(`${base}/mcp/hostile`, {
      method: "POST",
      headers: { authorization: `Bearer ${evilToken}`, "content-type": "application/json", accept: "application/json, text/event-stream", "x-hostile": "redirect" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "ping" }),
    });
    expect({ status: res.status, location: res.headers.get("location"), code: res.headers.get("x-ath-error") }).toEqual({ status: 502, location: null, code: "UPSTREAM_UNAVAILABLE" });
    expect(((await res.json()) as { details: { reason: string } }).details.reason).toBe("upstream_redirect");
  });

  test("a tools/list answer that never ends is cut at the bound, not buffered: the client gets an end, the upstream's stream is cancelled", async () => {
    for (const how of ["endless-sse", "endless-json"]) {
      hostile.sent = 0;
      // the answer ends — a 502, an error mid-body or the connection closed before any byte — never the endless text
      const res = await fetch(`${base}/mcp/hostile`, {
        method: "POST",
        headers: { authorization: `Bearer ${evilToken}`, "content-type": "application/json", accept: "application/json, text/event-stream", "x-hostile": how },
        body: JSON.stringify({ jsonrpc: "2.0", id: 7, method: "tools/list", params: {} }),
      }).catch((err: Error) => err);
      let received = 0;
      if (how === "endless-json") expect(res instanceof Response && res.status).toBe(502);
      if (res instanceof Response) {
        const reader = res.body!.getReader();
        for (;;) {
          const r = await reader.read().catch(() => ({ done: true as const, value: undefined }));
          if (r.done) break;
          received += r.value.byteLength;
        }
      }
      expect({ how, received: received < 64 * 1024 }).toEqual({ how, received: true });
      // ath held at most the bound (8 MiB), then cancelled the upstream's stream: what the hop sent is that plus what sat
      // in the sockets' buffers between them — bounded, where it used to be everything (1 GB in 30 s)
      expect(hostile.sent).toBeLessThan(32 * 1024 * 1024);
      for (let i = 0; i < 50 && hostile.sending; i++) await Bun.sleep(20);
      expect(hostile.sending).toBe(false);
    }
  });
});

describe("Streamable HTTP through ath", () => {
  test("GET opens the server's stream, DELETE ends the session: both reach the upstream with its session id", async () => {
    const id = await session(aliceToken);
    const stream = await fetch(`${base}/mcp/mail`, { headers: { authorization: `Bearer ${aliceToken}`, accept: "text/event-stream", "mcp-session-id": id, "mcp-protocol-version": "2025-11-25" } });
    expect(stream.status).toBe(200);
    expect(stream.headers.get("content-type")).toContain("text/event-stream");
    await stream.body?.cancel();
    const end = await fetch(`${base}/mcp/mail`, { method: "DELETE", headers: { authorization: `Bearer ${aliceToken}`, "mcp-session-id": id, "mcp-protocol-version": "2025-11-25" } });
    expect(end.status).toBe(200);
    expect(upstream.requests.filter((r) => r.sessionId === id).map((r) => r.method)).toEqual(["POST", "GET", "DELETE"]);
    const after = await rpc(aliceToken, { jsonrpc: "2.0", id: 1, method: "ping" }, "mail", id);
    expect(after.status).toBe(404);
    await after.body?.cancel();
  });

  test("malformed input gets JSON errors, never a 500", async () => {
    const post = (body: string) => fetch(`${base}/mcp/mail`, { method: "POST", headers: { authorization: `Bearer ${aliceToken}`, "content-type": "application/json" }, body });
    const notJson = await post("{not json");
    expect(notJson.status).toBe(400);
    expect(await notJson.json()).toMatchObject({ jsonrpc: "2.0", id: null, error: { code: -32700 } });
    for (const body of ["[]", "[1]", "null", "42"]) {
      const res = await post(body);
      expect(res.status).toBe(400);
      expect(await res.json()).toMatchObject({ error: { code: -32600 } });
    }
    const put = await fetch(`${base}/mcp/mail`, { method: "PUT", headers: { authorization: `Bearer ${aliceToken}` } });
    expect(put.status).toBe(405);
    expect(await put.json()).toMatchObject({ code: "METHOD_NOT_ALLOWED" });
    const unknown = await fetch(`${base}/mcp/nothing`, { method: "POST", headers: { authorization: `Bearer ${aliceToken}` } });
    expect(unknown.status).toBe(404);
    expect((await fetch(`${base}/.well-known/oauth-protected-resource/mcp/nothing`)).status).toBe(404);
    const form = (body: string, headers: Record<string, string> = {}) =>
      fetch(`${base}/oauth/token`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded", ...headers }, body });
    for (const [res, status, error] of [
      [await form("grant_type=password&client_id=x"), 401, "invalid_client"],
      [await form("", { authorization: "Basic %%%" }), 401, "invalid_client"],
      [await form("grant_type=authorization_code&grant_type=refresh_token"), 400, "invalid_request"],
      [await fetch(`${base}/oauth/token`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" }), 400, "invalid_request"],
      [await fetch(`${base}/oauth/register`, { method: "POST", headers: { "content-type": "application/json" }, body: "{" }), 400, "invalid_request"],
      [await fetch(`${base}/oauth/register`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ redirect_uris: [host.redirectUrl], grant_types: ["password"] }) }), 400, "invalid_client_metadata"],
    ] as const) {
      expect(res.status).toBe(status);
      expect(await res.json()).toMatchObject({ error });
    }
    for (const query of ["", "?client_id=a&client_id=b", "?client_id=%00", `?client_id=${encodeURIComponent(host.documentUrl)}&redirect_uri=https://evil.example/cb`]) {
      const res = await fetch(`${base}/oauth/authorize${query}`, { redirect: "manual" });
      expect(res.status).toBe(400);
      expect(res.headers.get("content-type")).toContain("text/html");
    }
    // A verified redirect URI gets the errors after it, with state and iss.
    const clientId = provider0ClientId;
    const res = await fetch(`${base}/oauth/authorize?client_id=${clientId}&redirect_uri=${encodeURIComponent(host.redirectUrl)}&response_type=code&state=st`, { redirect: "manual" });
    expect(res.status).toBe(302);
    const back = new URL(res.headers.get("location")!);
    expect(Object.fromEntries(back.searchParams)).toMatchObject({ error: "invalid_request", state: "st", iss: base });
    const noResource = await fetch(`${base}/oauth/authorize?client_id=${clientId}&redirect_uri=${encodeURIComponent(host.redirectUrl)}&response_type=code&code_challenge=${"a".repeat(43)}&code_challenge_method=S256`, { redirect: "manual" });
    // two MCP servers here: resource is required
    expect(new URL(noResource.headers.get("location")!).searchParams.get("error")).toBe("invalid_target");
  });
});

describe("approval-held tools", () => {
  test("a call a person denies is a JSON-RPC error and never reaches the upstream", async () => {
    const id = await session(aliceToken);
    const call = { jsonrpc: "2.0", id: 3, method: "tools/call", params: { name: "send_email", arguments: { to: "boss@example.com", text: "I quit" } } };
    const held = await answer(await rpc(aliceToken, call, "mail", id));
    expect(held.error?.data?.ath_error).toBe("APPROVAL_REQUIRED");
    expect(held.error?.data?.approval_url).toStartWith(`${base}/ath/approvals/ath_apr_`);
    await alicePage.goto(held.error!.data!.approval_url!);
    await clickAndWait(alicePage, "Deny");
    const again = await answer(await rpc(aliceToken, { ...call, id: 4 }, "mail", id));
    expect(again.error?.data?.ath_error).toBe("APPROVAL_DENIED");
    expect(upstream.calls.filter((c) => c.tool === "send_email")).toEqual([]);
  });

  test("a batch holding a call that needs approval is sent not at all, and spends nothing", async () => {
    const id = await session(aliceToken);
    const before = upstream.calls.length;
    const batch = [
      { jsonrpc: "2.0", id: 21, method: "tools/call", params: { name: "whoami", arguments: {} } },
      { jsonrpc: "2.0", id: 22, method: "tools/call", params: { name: "send_email", arguments: { to: "x@example.com", text: "batched" } } },
    ];
    const res = await rpc(aliceToken, batch, "mail", id);
    expect(res.status).toBe(200);
    const answers = (await res.json()) as { id: number; error: { data: { ath_error: string } } }[];
    expect(answers.map((a) => [a.id, a.error.data.ath_error])).toEqual([[21, "POLICY_DENIED"], [22, "APPROVAL_REQUIRED"]]);
    expect(upstream.calls.length).toBe(before);
  });

  test("an approved call runs exactly once, resent from another session with another id", async () => {
    const first = await session(aliceToken);
    const args = { to: "team@example.com", text: "lunch?" };
    const held = await answer(await rpc(aliceToken, { jsonrpc: "2.0", id: 5, method: "tools/call", params: { name: "send_email", arguments: args } }, "mail", first));
    expect(held.error?.data?.ath_error).toBe("APPROVAL_REQUIRED");
    await alicePage.goto(held.error!.data!.approval_url!);
    await clickAndWait(alicePage, "Approve");
    const second = await session(aliceToken);
    const resend = { jsonrpc: "2.0", id: 99, method: "tools/call", params: { name: "send_email", arguments: args } };
    const ran = await answer(await rpc(aliceToken, resend, "mail", second));
    expect(ran.result?.content[0]!.text).toBe("sent to team@example.com");
    const twice = await answer(await rpc(aliceToken, { ...resend, id: 100 }, "mail", second));
    expect(twice.error?.data?.ath_error).toBe("APPROVAL_REQUIRED");
    expect(twice.error?.data?.approval_id).not.toBe(held.error?.data?.approval_id);
    expect(upstream.calls.filter((c) => c.tool === "send_email")).toEqual([{ tool: "send_email", sub: "alice", args }]);
  });

  test("an approval is bound to the arguments' bytes as sent: another key order, a duplicate key or another big integer is not the approved call", async () => {
    const id = await session(aliceToken);
    const text = '{"to":"team@example.com","text":"lunch?","n":12345678901234567893}';
    const call = (args: string, rpcId: number) => `{"jsonrpc":"2.0","id":${rpcId},"method":"tools/call","params":{"name":"send_email","arguments":${args}}}`;
    const held = await answer(await rpc(aliceToken, call(text, 41), "mail", id));
    expect(held.error?.data?.ath_error).toBe("APPROVAL_REQUIRED");
    await alicePage.goto(held.error!.data!.approval_url!);
    // the page shows the bytes that will be sent: the big integer as written, not rounded
    expect(await alicePage.content()).toContain("12345678901234567893");
    await clickAndWait(alicePage, "Approve");
    const before = upstream.calls.length;
    for (const [n, other] of [
      [42, '{"text":"lunch?","to":"team@example.com","n":12345678901234567893}'],
      [43, '{"to":"team@example.com","text":"lunch?","n":12345678901234567892}'],
    ] as const) {
      const r = await answer(await rpc(aliceToken, call(other, n), "mail", id));
      expect(r.error?.data?.ath_error).toBe("APPROVAL_REQUIRED");
      expect(r.error?.data?.approval_id).not.toBe(held.error?.data?.approval_id);
    }
    // a duplicate key is not read one way by ath and another by the upstream: the message is refused unread
    const dup = await rpc(aliceToken, call('{"to":"mallory@evil.example","to":"team@example.com","text":"lunch?","n":12345678901234567893}', 44), "mail", id);
    expect(dup.status).toBe(400);
    expect(((await dup.json()) as { error: { code: number } }).error.code).toBe(-32700);
    expect(upstream.calls.length).toBe(before);
    // the approved bytes themselves still run, once
    const ran = await answer(await rpc(aliceToken, call(text, 45), "mail", id));
    expect(ran.result?.content[0]!.text).toBe("sent to team@example.com");
    expect(upstream.calls.length).toBe(before + 1);
  });
});

describe("policy in MCP terms", () => {
  test("a CEL deny over a tool argument is a JSON-RPC error naming the rule's reason, and never reaches the upstream", async () => {
    const id = await session(aliceToken);
    const denied = await answer(await rpc(aliceToken, { jsonrpc: "2.0", id: 31, method: "tools/call", params: { name: "read_mail", arguments: { folder: "secret" } } }, "mail", id));
    expect(denied.error?.data?.ath_error).toBe("POLICY_DENIED");
    expect(denied.error?.data?.reason).toBe("The secret folder is off limits");
    expect(upstream.calls.filter((c) => c.tool === "read_mail" && (c.args as { folder?: string }).folder === "secret")).toEqual([]);
    // the same tool with other arguments passes
    const allowed = await answer(await rpc(aliceToken, { jsonrpc: "2.0", id: 32, method: "tools/call", params: { name: "read_mail", arguments: { folder: "inbox" } } }, "mail", id));
    expect(allowed.result?.content[0]!.text).toBe("inbox of alice: 1 message");
    expect(upstream.calls.filter((c) => c.tool === "read_mail" && (c.args as { folder?: string }).folder === "inbox").length).toBe(1);
  });

  test("an unconditionally denied tool is missing from tools/list (JSON and SSE answers) and refused when called anyway", async () => {
    const id = await session(aliceToken);
    for (const accept of ["application/json, text/event-stream", "text/event-stream, application/json"]) {
      const res = await fetch(`${base}/mcp/mail`, {
        method: "POST",
        headers: { authorization: `Bearer ${aliceToken}`, "content-type": "application/json", accept, "mcp-session-id": id, "mcp-protocol-version": "2025-11-25" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 33, method: "tools/list", params: {} }),
      });
      expect(res.status).toBe(200);
      const listed = (await answer(res)) as unknown as { result: { tools: { name: string }[] } };
      expect(listed.result.tools.map((t) => t.name).sort()).toEqual(["count_mail", "forward_mail", "read_mail", "send_email", "whoami"]);
    }
    const refused = await answer(await rpc(aliceToken, { jsonrpc: "2.0", id: 34, method: "tools/call", params: { name: "delete_all", arguments: {} } }, "mail", id));
    expect(refused.error?.data?.ath_error).toBe("POLICY_DENIED");
    expect(refused.error?.data?.reason).toBe("Nobody deletes every mail through ath");
    expect(upstream.calls.filter((c) => c.tool === "delete_all")).toEqual([]);
  });

  test("a policy approve holds the call; after approval it runs exactly once", async () => {
    const id = await session(aliceToken);
    const inside = await answer(await rpc(aliceToken, { jsonrpc: "2.0", id: 35, method: "tools/call", params: { name: "forward_mail", arguments: { to: "team@example.com" } } }, "mail", id));
    expect(inside.result?.content[0]!.text).toBe("forwarded to team@example.com");
    const call = { jsonrpc: "2.0", id: 36, method: "tools/call", params: { name: "forward_mail", arguments: { to: "rival@elsewhere.test" } } };
    const held = await answer(await rpc(aliceToken, call, "mail", id));
    expect(held.error?.data?.ath_error).toBe("APPROVAL_REQUIRED");
    expect(upstream.calls.filter((c) => (c.args as { to?: string }).to === "rival@elsewhere.test")).toEqual([]);
    await alicePage.goto(held.error!.data!.approval_url!);
    await clickAndWait(alicePage, "Approve");
    const ran = await answer(await rpc(aliceToken, { ...call, id: 37 }, "mail", id));
    expect(ran.result?.content[0]!.text).toBe("forwarded to rival@elsewhere.test");
    const twice = await answer(await rpc(aliceToken, { ...call, id: 38 }, "mail", id));
    expect(twice.error?.data?.ath_error).toBe("APPROVAL_REQUIRED");
    expect(upstream.calls.filter((c) => (c.args as { to?: string }).to === "rival@elsewhere.test")).toEqual([{ tool: "forward_mail", sub: "alice", args: { to: "rival@elsewhere.test" } }]);
  });
});

describe("budgets in MCP terms", () => {
  test("a budget on `MCP tools/call count_mail` counts each call: the third of a limit of 2 is a JSON-RPC BUDGET_EXHAUSTED, never sent", async () => {
    const id = await session(aliceToken);
    const count = (n: number) => rpc(aliceToken, { jsonrpc: "2.0", id: 40 + n, method: "tools/call", params: { name: "count_mail", arguments: {} } }, "mail", id);
    const first = await count(1);
    expect(first.headers.get("ath-budget-remaining")).toBe("1");
    expect((await answer(first)).result?.content[0]!.text).toBe("1");
    const second = await count(2);
    expect(second.headers.get("ath-budget-remaining")).toBe("0");
    expect((await answer(second)).result?.content[0]!.text).toBe("1");
    const third = await answer(await count(3));
    expect(third.error?.data?.ath_error).toBe("BUDGET_EXHAUSTED");
    expect(third.error?.data).toMatchObject({ limit: 2, window: "1d" });
    expect(upstream.calls.filter((c) => c.tool === "count_mail" && c.sub === "alice").length).toBe(2);
    // Bob's own count (per agent and user) is untouched
    expect((await answer(await rpc(bobToken, { jsonrpc: "2.0", id: 50, method: "tools/call", params: { name: "count_mail", arguments: {} } }, "mail", await session(bobToken)))).result?.content[0]!.text).toBe("1");
  });
});

describe("approval as a URL elicitation", () => {
  test("a client that declared URL-mode elicitation gets the approval page as one (the SDK's UrlElicitationRequiredError), then its call runs once", async () => {
    const provider = new MemoryOAuthProvider(host.redirectUrl);
    provider.info = { client_id: provider0ClientId };
    provider.saved = { access_token: aliceToken, token_type: "Bearer" };
    const transport = new StreamableHTTPClientTransport(new URL(`${base}/mcp/mail`), { authProvider: provider });
    const client = new Client({ name: "elicit-host", version: "1" }, { capabilities: { elicitation: { url: {} } } });
    await client.connect(transport);
    const args = { to: "ops@example.com", text: "deploy?" };
    const held = await client.callTool({ name: "send_email", arguments: args }).catch((e: unknown) => e);
    expect(held).toBeInstanceOf(UrlElicitationRequiredError);
    const [elicitation] = (held as UrlElicitationRequiredError).elicitations;
    expect(elicitation!.mode).toBe("url");
    expect(elicitation!.url).toStartWith(`${base}/ath/approvals/ath_apr_`);
    expect(elicitation!.elicitationId).toBe(elicitation!.url.split("/").at(-1)!);
    await alicePage.goto(elicitation!.url);
    await clickAndWait(alicePage, "Approve");
    const ran = await client.callTool({ name: "send_email", arguments: args });
    expect((ran.content as { text: string }[])[0]!.text).toBe("sent to ops@example.com");
    expect(upstream.calls.filter((c) => c.tool === "send_email" && c.args.to === "ops@example.com").length).toBe(1);
    await client.close();
  });
});

describe("the person's upstream token", () => {
  test("the upstream refusing it (401): ath refreshes the grant once and the call goes through, the client none the wiser", async () => {
    for (const t of auth.issuedTokens.filter((t) => t.kind === "AccessToken")) await auth.revokeAccessToken(t.value);
    const refreshesBefore = auth.count("grant.success:refresh_token");
    const id = await session(aliceToken);
    const res = await answer(await rpc(aliceToken, { jsonrpc: "2.0", id: 11, method: "tools/call", params: { name: "whoami", arguments: {} } }, "mail", id));
    expect(res.result?.content[0]!.text).toBe("alice");
    expect(auth.count("grant.success:refresh_token")).toBe(refreshesBefore + 1);
  });
});

describe("refresh tokens", () => {
  test("a refresh rotates; the spent token presented later revokes the family; another client learns nothing", async () => {
    const refresh = (token: string, clientId: string) =>
      fetch(`${base}/oauth/token`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ grant_type: "refresh_token", refresh_token: token, client_id: clientId }).toString(),
      });
    const reg = await (await fetch(`${base}/oauth/register`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ redirect_uris: [host.redirectUrl], token_endpoint_auth_method: "none" }) })).json();
    const stranger = await refresh(aliceRefresh, reg.client_id);
    expect(stranger.status).toBe(400);
    expect(await stranger.json()).toMatchObject({ error: "invalid_grant" });

    const aliceClient = (await (await fetch(`${base}/ath/admin/tokens?provider_id=mail`, { headers: { "x-ath-user-token": gw.adminToken } })).json()) as { tokens: { client_id: string; user_id: string }[] };
    const clientId = aliceClient.tokens.find((t) => t.user_id === "alice")!.client_id;
    expect(clientId).toStartWith("mcp_");
    // The client id the MCP client uses is its registration's; the agent record behind it shares it.
    const rotated = await refresh(aliceRefresh, clientId);
    expect(rotated.status).toBe(200);
    const next = (await rotated.json()) as { access_token: string; refresh_token: string; refresh_expires_in: number };
    expect(next.refresh_token).not.toBe(aliceRefresh);
    // --refresh-idle (1 d), not a fixed 30 days: the rotated token expires unused after the gateway's idle limit
    expect(next.refresh_expires_in).toBeLessThanOrEqual(86400);
    expect(next.refresh_expires_in).toBeGreaterThan(86400 - 600);
    expect((await rpc(next.access_token, { jsonrpc: "2.0", id: 7, method: "ping" })).status).not.toBe(401);
    await Bun.sleep(2100); // past the 2 s in which a repeat is a race, not a theft (DESIGN §17)
    const reuse = await refresh(aliceRefresh, clientId);
    expect(await reuse.json()).toMatchObject({ error: "invalid_grant" });
    expect((await rpc(next.access_token, { jsonrpc: "2.0", id: 8, method: "ping" })).status).toBe(401);
    expect(await (await refresh(next.refresh_token, clientId)).json()).toMatchObject({ error: "invalid_grant" });
  });
});

describe("the person and the admin decide", () => {
  test("Deny on ath's consent page sends the client error=access_denied with its state and iss", async () => {
    const { page } = await freshPage(browser);
    const url = new URL(`${base}/oauth/authorize`);
    const params = { response_type: "code", client_id: provider0ClientId, redirect_uri: host.redirectUrl, code_challenge: "c".repeat(43), code_challenge_method: "S256", state: "deny-me", resource: `${base}/mcp/mail` };
    for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
    const before = host.landings.length;
    await page.goto(url.href);
    await clickAndWait(page, "Deny");
    expect(host.landings[before]).toMatchObject({ error: "access_denied", state: "deny-me", iss: base, code: null });
  });

  test("an admin suspending an MCP client stops its tokens at once", async () => {
    const admin = { "x-ath-user-token": gw.adminToken, "content-type": "application/json" };
    const listed = (await (await fetch(`${base}/ath/admin/tokens?provider_id=mail`, { headers: admin })).json()) as { tokens: { client_id: string; user_id: string }[] };
    const bobClient = listed.tokens.find((t) => t.user_id === "bob")!.client_id;
    expect(bobClient).toStartWith("mcp_doc_");
    const agent = await (await fetch(`${base}/ath/admin/agents/${bobClient}`, { headers: admin })).json();
    expect(agent).toMatchObject({ agent_id: `mcp:${host.documentUrl}`, developer: { name: "Documented MCP Client" } });
    expect((await fetch(`${base}/ath/admin/agents/${bobClient}`, { method: "PATCH", headers: admin, body: JSON.stringify({ status: "suspended" }) })).status).toBe(200);
    const res = await rpc(bobToken, { jsonrpc: "2.0", id: 1, method: "ping" });
    expect(res.status).toBe(401);
    expect(res.headers.get("www-authenticate")).toContain('error="invalid_token"');
  });
});

describe("the person's upstream sign-in ends", () => {
  test("a grant the upstream refuses at refresh: ath's 401 invalid_token sends the client to authorize again", async () => {
    const provider = new MemoryOAuthProvider(host.redirectUrl);
    const { page } = await freshPage(browser);
    const client = await connectAs(page, provider, "carol", { expect: /Test MCP Client/ });
    await client.close();
    await auth.revokeAllGrants();
    for (const t of auth.issuedTokens.filter((t) => t.kind === "AccessToken")) await auth.revokeAccessToken(t.value);
    const res = await rpc(provider.saved!.access_token, { jsonrpc: "2.0", id: 1, method: "ping" });
    expect(res.status).toBe(401);
    const challenge = res.headers.get("www-authenticate")!;
    expect(challenge).toContain('error="invalid_token"');
    expect(challenge).toContain(`resource_metadata="${base}/.well-known/oauth-protected-resource/mcp/mail"`);
  });
});
