/**
 * Prints a real transcript of the MCP front door (docs/mcp-front-door.md): oidc-provider as the upstream OAuth server,
 * an MCP server built with the official SDK behind it (it speaks 2025-11-25 only), `ath serve` in front, and the
 * official SDK client whose person consents in headless Chromium — then the same token on the 2026-07-28 wire, as a
 * 2026 client sends it (ath bridging onto an upstream session it holds): discovery, a tool list with its caching hints,
 * a header that disagrees with the body, a call, an approval as a multi-round-trip round the person approves in
 * Chromium, its retry run once, a replay refused. Run: `bun scripts/mcp-transcript.ts` (needs Debian's chromium).
 *
 * `bun scripts/mcp-transcript.ts stdio` prints docs/mcp.md's transcript instead: `ath mcp` (the compiled dist/ath, built
 * if absent) spawned by the official SDK 2.x client pinned to 2026-07-28, every JSON-RPC message on its stdin and
 * stdout as it went, against a real `dist/ath serve` (oidc-provider and the sample API behind it): `server/discover`,
 * `tools/list`, `tools/call ath_providers`.
 */
import { Client, type JSONRPCMessage, type Transport } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import { freshPage, launchChromium } from "../tests/helpers/chromium.ts";
import { startGateway } from "../tests/helpers/gateway.ts";
import { MemoryOAuthProvider, mcpClient, startClientHost } from "../tests/helpers/mcp-oauth-client.ts";
import { freePort } from "../tests/helpers/net.ts";
import { clickAndWait } from "../tests/helpers/person.ts";
import { ATH_BIN, ensureBinary } from "../tests/helpers/cli-binary.ts";
import { tempDir } from "../tests/helpers/net.ts";
import { startWorld } from "../tests/helpers/world.ts";
import { startUpstreamAuth } from "../tests/helpers/upstream-auth.ts";
import { mailMcpProvider, startUpstreamMcp } from "../tests/helpers/upstream-mcp.ts";

let base = "";
const show = (s: string) => console.log(s.replaceAll(base, "https://ath.example.com"));

if (process.argv[2] === "stdio") await stdioTranscript();
else await frontDoor();

/** The front door: the 2025 client's journey, then the same token on the 2026-07-28 wire. */
async function frontDoor(): Promise<void> {
  const SCOPES = ["openid", "offline_access", "mail:read", "mail:send"];
  const port = await freePort();
  const auth = await startUpstreamAuth({ redirectUris: [`http://127.0.0.1:${port}/ath/callback`], scopes: SCOPES });
  const upstream = await startUpstreamMcp(auth);
  const host = await startClientHost();
  const gw = await startGateway({
    port,
    providers: {
      mail: {
        ...mailMcpProvider(auth, upstream, SCOPES),
        scope_rules: { "mail:read": ["MCP tools/call whoami", "MCP tools/call read_mail"], "mail:send": ["MCP tools/call send_email"] },
        approval_rules: [{ match: ["MCP tools/call send_email"], approver: "user" }],
      },
    },
  });
  base = gw.baseUrl;
  const browser = await launchChromium();
  try {
    show(`$ curl -si -X POST ${base}/mcp/mail -H 'content-type: application/json' -d '{}'`);
    const r401 = await fetch(`${base}/mcp/mail`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
    show(`HTTP/1.1 ${r401.status}\nwww-authenticate: ${r401.headers.get("www-authenticate")}\n\n${await r401.text()}\n`);
    show(`$ curl -s ${base}/.well-known/oauth-protected-resource/mcp/mail`);
    show(JSON.stringify(await (await fetch(`${base}/.well-known/oauth-protected-resource/mcp/mail`)).json(), null, 2) + "\n");
    show(`$ curl -s ${base}/.well-known/oauth-authorization-server`);
    show(JSON.stringify(await (await fetch(`${base}/.well-known/oauth-authorization-server`)).json(), null, 2) + "\n");

    const provider = new MemoryOAuthProvider(host.redirectUrl, undefined, "Claude Code");
    const first = mcpClient(`${base}/mcp/mail`, provider);
    await first.client.connect(first.transport).catch((e) => {
      if (!(e instanceof UnauthorizedError)) throw e;
    });
    show(`# the SDK client registered: client_id ${provider.info?.client_id}`);
    show(`# it opens: ${provider.authorizationUrl!.href.replace(/code_challenge=[^&]+/, "code_challenge=…").replace(/state=[^&]+/, "state=…")}`);
    const { page } = await freshPage(browser);
    await page.goto(provider.authorizationUrl!.href);
    show(`# ath's consent page (${new URL(page.url()).pathname.replace(/[^/]+$/, "…")}):\n${(await page.locator("main").innerText()).split("\n").filter(Boolean).map((l) => "#   " + l).join("\n")}`);
    await clickAndWait(page, "Approve");
    await page.locator('input[name="login"]').fill("alice");
    await clickAndWait(page, "Approve");
    const landing = host.landings.at(-1)!;
    show(`# back at the client: code=${landing.code!.slice(0, 14)}… iss=${landing.iss}`);
    await first.transport.finishAuth(landing.code!);
    show(`# token response: token_type=${provider.saved!.token_type} scope="${provider.saved!.scope}" access_token=${provider.saved!.access_token.slice(0, 10)}… refresh_token=${provider.saved!.refresh_token!.slice(0, 10)}…`);
    const second = mcpClient(`${base}/mcp/mail`, provider);
    await second.client.connect(second.transport);
    show(`# tools/list → ${(await second.client.listTools()).tools.map((t) => t.name).join(", ")}`);
    const who = await second.client.callTool({ name: "whoami", arguments: {} });
    show(`# tools/call whoami → ${JSON.stringify(who.content)}`);
    const held = await second.client.callTool({ name: "send_email", arguments: { to: "team@example.com", text: "lunch?" } }).catch((e: Error) => e);
    show(`# tools/call send_email → ${held instanceof Error ? held.message : JSON.stringify(held)}`);
    show(`# the upstream MCP server saw Authorization: ${upstream.requests.at(-1)!.authorization!.slice(0, 14)}… (the person's upstream token, never ath's)`);
    await second.client.close();
    await stateless(provider.saved!.access_token, page);
  } finally {
    await browser.close();
    await gw.cleanup();
    await host.stop();
    await upstream.stop();
    await auth.stop();
  }
}

/** The 2026-07-28 wire with the same token: each request shown as curl would send it, each answer as it came. */
async function stateless(token: string, person: import("playwright-core").Page): Promise<void> {
  show("\n# — the same client's token on the 2026-07-28 wire (the mail server speaks 2025-11-25 only: ath bridges) —");
  const meta = { "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": { elicitation: { url: {} } } };
  let id = 0;
  const send = async (method: string, params: Record<string, unknown>, headers: Record<string, string> = {}) => {
    const name = typeof params.name === "string" ? params.name : undefined;
    const sent = { "mcp-protocol-version": "2026-07-28", "mcp-method": method, ...(name ? { "mcp-name": name } : {}), ...headers };
    const body = { jsonrpc: "2.0", id: ++id, method, params: { ...params, _meta: meta } };
    show(`$ curl -si -X POST ${base}/mcp/mail -H 'authorization: Bearer ath_tk_…' ${Object.entries(sent).map(([k, v]) => `-H '${k}: ${v}'`).join(" ")} -d '${JSON.stringify(body).replace(/"ath1\.[^"]+"/g, '"ath1.…"')}'`);
    const res = await fetch(`${base}/mcp/mail`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json", accept: "application/json, text/event-stream", ...sent },
      body: JSON.stringify(body),
    });
    const answer = (await res.json()) as Record<string, any>;
    // a tool list is shown by its tools' names (their schemas are the upstream's, unchanged)
    const shown = Array.isArray(answer.result?.tools) ? { ...answer, result: { ...answer.result, tools: answer.result.tools.map((t: { name: string }) => `${t.name} {…}`) } } : answer;
    show(`HTTP/1.1 ${res.status}\n${JSON.stringify(shown, null, 2).replace(/"ath1\.[^"]{12}[^"]+"/g, (s) => `${s.slice(0, 18)}…"`)}\n`);
    return answer;
  };
  await send("server/discover", {});
  await send("tools/list", {});
  await send("tools/call", { name: "whoami", arguments: {} }, { "mcp-name": "send_email" });
  await send("tools/call", { name: "whoami", arguments: {} });
  const args = { to: "team@example.com", text: "lunch?" };
  const round = (await send("tools/call", { name: "send_email", arguments: args })).result;
  show(`# the host opens ${round.inputRequests.ath_approval.params.url.replace(base, "https://ath.example.com")}; the person approves:`);
  await person.goto(round.inputRequests.ath_approval.params.url);
  const page = (await person.locator("main").innerText()).split("\n").filter(Boolean);
  // what will be sent, as the page shows it (the rest of the page is the §18 journey's)
  show(page.slice(0, page.findIndex((l) => /^THE AGENT$/i.test(l))).map((l) => "#   " + l.replaceAll(new URL(base).host, "ath.example.com")).join("\n"));
  await clickAndWait(person, "Approve");
  const retry = { name: "send_email", arguments: args, requestState: round.requestState, inputResponses: { ath_approval: { action: "accept" } } };
  await send("tools/call", retry);
  await send("tools/call", retry);
}

/**
 * `ath mcp` on stdio, on the 2026-07-28 wire: the SDK 2.x client pinned to it, each message written to the child's
 * stdin (→) and read from its stdout (←) printed whole, but a tool's schemas (shown by name). The transport is wrapped
 * rather than subclassed, so the SDK probes with `server/discover` on this very process (the base
 * `StdioClientTransport` would probe on a short-lived sibling whose exchange could not be shown).
 */
async function stdioTranscript(): Promise<void> {
  ensureBinary();
  const w = await startWorld({
    binary: true,
    onlyProviders: true,
    providers: (auth, api) => ({
      mail: {
        display_name: "Sample Mail",
        available_scopes: ["openid", "mail:read", "mail:send"],
        authorize_endpoint: auth.authorizeEndpoint,
        token_endpoint: auth.tokenEndpoint,
        api_base_url: api.baseUrl,
        client_id: auth.postClient.client_id,
        client_secret: auth.postClient.client_secret,
      },
    }),
  });
  base = w.baseUrl;
  const home = await tempDir("mcp-transcript-home");
  const version = (await new Response(Bun.spawn([ATH_BIN, "--version"], { stdout: "pipe" }).stdout).text()).trim();
  const print = (dir: string, m: JSONRPCMessage) => {
    const r = (m as { result?: { tools?: { name: string }[] } }).result;
    const shown = Array.isArray(r?.tools) ? { ...m, result: { ...r, tools: r.tools.map((t) => `${t.name} {…}`) } } : m;
    show(`${dir} ${JSON.stringify(shown, null, 2).replaceAll(home.path, "~/.ath")}`);
  };
  const child = new StdioClientTransport({
    command: ATH_BIN,
    args: ["mcp", "-g", w.baseUrl],
    env: { PATH: process.env.PATH ?? "", HOME: home.path, ATH_HOME: home.path, NO_COLOR: "1" },
    stderr: "pipe",
  });
  const recorded: Transport = {
    start: () => child.start(),
    close: () => child.close(),
    send: (m) => (print("→", m), child.send(m)),
  };
  child.onmessage = (m: JSONRPCMessage) => (print("←", m), recorded.onmessage?.(m));
  child.onclose = () => recorded.onclose?.();
  child.onerror = (e) => recorded.onerror?.(e);
  const client = new Client({ name: "transcript-host", version: "1.0.0" }, { versionNegotiation: { mode: { pin: "2026-07-28" } } });
  try {
    show(`# ${version}; the host runs: ath mcp -g https://ath.example.com (→ the host writes to ath's stdin, ← ath's stdout)`);
    await client.connect(recorded);
    show(`# negotiated: ${client.getNegotiatedProtocolVersion()} (era ${client.getProtocolEra()})`);
    await client.listTools();
    await client.callTool({ name: "ath_providers", arguments: {} });
  } finally {
    await client.close();
    await home.remove();
    await w.stop();
  }
}
