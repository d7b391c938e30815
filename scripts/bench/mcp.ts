/**
 * What the MCP front door adds to a `tools/call` (DESIGN §18: < 1 ms p50): the same call sent straight to an MCP server
 * built with the official SDK (stateful session, JSON answers) and through `ath serve` (`/mcp/<id>`, an MCP client's
 * token got by a real code grant with the person's part in headless Chromium), measured in the same run, interleaved.
 * The upstream accepts any bearer token: the bench measures the front door, not the upstream's own token check.
 *
 * Usage: bun scripts/bench/mcp.ts [--requests 2000] [--binary]
 */
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { loadavg } from "node:os";
import { launchChromium, freshPage } from "../../tests/helpers/chromium.ts";
import { startGateway } from "../../tests/helpers/gateway.ts";
import { codeGrant, registerClient, startClientHost } from "../../tests/helpers/mcp-oauth-client.ts";
import { freePort } from "../../tests/helpers/net.ts";
import { startUpstreamAuth } from "../../tests/helpers/upstream-auth.ts";
import { median, ms, percentile, sequential, versus } from "./lib.ts";

const args = process.argv.slice(2);
const requests = Number(args[args.indexOf("--requests") + 1] ?? "") || 2000;
const binary = args.includes("--binary");

const sessions = new Map<string, WebStandardStreamableHTTPServerTransport>();
const upstream = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  async fetch(req) {
    if (!/^Bearer \S+$/.test(req.headers.get("authorization") ?? "")) return new Response(null, { status: 401 });
    const id = req.headers.get("mcp-session-id");
    let transport = id ? sessions.get(id) : undefined;
    if (!transport) {
      const t = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: () => crypto.randomUUID(), enableJsonResponse: true, onsessioninitialized: (sid) => void sessions.set(sid, t) });
      const server = new McpServer({ name: "bench", version: "1" });
      server.registerTool("echo", { description: "echo" }, async () => ({ content: [{ type: "text", text: "ok" }] }));
      await server.connect(t);
      transport = t;
    }
    return transport.handleRequest(req);
  },
});
const upstreamUrl = `http://127.0.0.1:${upstream.port}/mcp`;
const port = await freePort();
const auth = await startUpstreamAuth({ redirectUris: [`http://127.0.0.1:${port}/ath/callback`], scopes: ["openid", "tools"] });
const gw = await startGateway({
  port,
  binary,
  providers: { bench: { display_name: "Bench", available_scopes: ["openid", "tools"], authorize_endpoint: auth.authorizeEndpoint, token_endpoint: auth.tokenEndpoint, client_id: auth.postClient.client_id, client_secret: auth.postClient.client_secret, mcp: { url: upstreamUrl } } },
});
const browser = await launchChromium();
try {
  const host = await startClientHost();
  const clientId = await registerClient(gw.baseUrl, host.redirectUrl);
  const { page } = await freshPage(browser);
  const tokens = await codeGrant(page, { base: gw.baseUrl, clientId, redirectUri: host.redirectUrl, resource: `${gw.baseUrl}/mcp/bench`, landings: host.landings, login: "bench" });
  await host.stop();

  const headers = (token: string, session?: string) => ({
    authorization: `Bearer ${token}`,
    "content-type": "application/json",
    accept: "application/json, text/event-stream",
    ...(session ? { "mcp-session-id": session, "mcp-protocol-version": "2025-11-25" } : {}),
  });
  async function open(url: string, token: string): Promise<string> {
    const init = { jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "bench", version: "1" } } };
    const res = await fetch(url, { method: "POST", headers: headers(token), body: JSON.stringify(init) });
    const id = res.headers.get("mcp-session-id")!;
    await res.text();
    await (await fetch(url, { method: "POST", headers: headers(token, id), body: JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }) })).text();
    return id;
  }
  const direct = { url: upstreamUrl, token: "direct-token" };
  const through = { url: `${gw.baseUrl}/mcp/bench`, token: tokens.access_token };
  const directSession = await open(direct.url, direct.token);
  const throughSession = await open(through.url, through.token);
  let n = 0;
  const probe = (t: { url: string; token: string }, session: string) => async () => {
    const res = await fetch(t.url, { method: "POST", headers: headers(t.token, session), body: JSON.stringify({ jsonrpc: "2.0", id: ++n, method: "tools/call", params: { name: "echo", arguments: {} } }) });
    const body = await res.text();
    if (res.status !== 200 || !body.includes('"ok"')) throw new Error(`tools/call failed: ${res.status} ${body}`);
  };
  const probes = [probe(direct, directSession), probe(through, throughSession)];
  await sequential(probes, 200, performance.now() + 30_000); // warm-up
  const load = loadavg()[0]!.toFixed(2);
  const [d, t] = await sequential(probes, requests, performance.now() + 120_000);
  const p50d = median(d!.samples);
  const p50t = median(t!.samples);
  console.log(`tools/call, ${d!.samples.length} each, interleaved (load average ${load} on ${navigator.hardwareConcurrency} cores, ${binary ? "dist/ath" : "bun src/main.ts"}):`);
  console.log(`  direct       p50 ${ms(p50d)}  p95 ${ms(percentile(d!.samples, 95))}`);
  console.log(`  through ath  p50 ${ms(p50t)}  p95 ${ms(percentile(t!.samples, 95))}  (${versus(p50t, p50d, "ms")})`);
} finally {
  await browser.close();
  await gw.cleanup();
  await auth.stop();
  await upstream.stop(true);
}
