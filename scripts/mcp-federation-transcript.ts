/**
 * Prints a real transcript of one MCP URL for three servers (docs/mcp-front-door.md, "A host with one URL for three
 * servers"): three MCP servers built with the official SDK, each behind its own OAuth server (oidc-provider) that it
 * asks about every token; `ath serve` in front of them; the official SDK client configured with `{base}/mcp` alone, its
 * person consenting in headless Chromium. It lists, connects the two other servers through `{prefix}connect` (the
 * person signs in at each upstream), lists again, calls each server, and shows what each upstream saw and what an
 * operator sees (`ath admin mcp`). Run: `bun scripts/mcp-federation-transcript.ts` (needs Debian's chromium).
 */
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import { chromium } from "playwright-core";
import { ensureBinary } from "../tests/helpers/cli-binary.ts";
import { startGateway } from "../tests/helpers/gateway.ts";
import { MemoryOAuthProvider, mcpClient, startClientHost } from "../tests/helpers/mcp-oauth-client.ts";
import { freePort } from "../tests/helpers/net.ts";
import { clickAndWait } from "../tests/helpers/person.ts";
import { startUpstreamAuth, type UpstreamAuth } from "../tests/helpers/upstream-auth.ts";
import { startUpstreamMcp, type UpstreamMcp } from "../tests/helpers/upstream-mcp.ts";

const SCOPES = ["openid", "offline_access", "mail:read", "mail:send"];
const SERVERS = ["mail", "calendar", "files"] as const;
const port = await freePort();
const auths = {} as Record<(typeof SERVERS)[number], UpstreamAuth>;
const upstreams = {} as Record<(typeof SERVERS)[number], UpstreamMcp>;
for (const id of SERVERS) {
  auths[id] = await startUpstreamAuth({ redirectUris: [`http://127.0.0.1:${port}/ath/callback`], scopes: SCOPES });
  upstreams[id] = await startUpstreamMcp(auths[id]);
}
const host = await startClientHost();
const providers = Object.fromEntries(
  SERVERS.map((id) => [
    id,
    {
      display_name: `${id[0]!.toUpperCase()}${id.slice(1)}`,
      available_scopes: SCOPES,
      authorize_endpoint: auths[id].authorizeEndpoint,
      token_endpoint: auths[id].tokenEndpoint,
      userinfo_endpoint: auths[id].userinfoEndpoint,
      client_id: auths[id].postClient.client_id,
      client_secret: auths[id].postClient.client_secret,
      mcp: { url: upstreams[id].url },
      ...(id === "mail" ? { policy: [{ match: ["MCP tools/call delete_all"], action: "deny" as const, reason: "Nobody deletes every mail through ath" }] } : {}),
    },
  ]),
);
const gw = await startGateway({ port, binary: true, providers });
const base = gw.baseUrl;
const show = (s: string) =>
  console.log(
    s
      .replaceAll(base, "https://ath.example.com")
      .replaceAll(encodeURIComponent(base), encodeURIComponent("https://ath.example.com"))
      .replaceAll(new URL(base).host, "ath.example.com")
      .replace(/mcp_[A-Za-z0-9_-]{22}/g, "mcp_…"),
  );
// Debian's chromium, as the tests launch it (tests/helpers/chromium.ts belongs to the test runner)
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium", args: ["--no-sandbox"] });
try {
  show("# .mcp.json of the host: one URL for every server ath fronts");
  show(JSON.stringify({ mcpServers: { work: { type: "http", url: `${base}/mcp` } } }, null, 2) + "\n");
  show(`$ curl -s ${base}/.well-known/oauth-protected-resource/mcp`);
  show(JSON.stringify(await (await fetch(`${base}/.well-known/oauth-protected-resource/mcp`)).json(), null, 2) + "\n");

  const provider = new MemoryOAuthProvider(host.redirectUrl, undefined, "Claude Code");
  const first = mcpClient(`${base}/mcp`, provider);
  await first.client.connect(first.transport).catch((e) => {
    if (!(e instanceof UnauthorizedError)) throw e;
  });
  show(`# the SDK client registered and opens: ${provider.authorizationUrl!.href.replace(/code_challenge=[^&]+/, "code_challenge=…").replace(/state=[^&]+/, "state=…").replace(/client_id=[^&]+/, "client_id=…")}`);
  const page = await (await browser.newContext()).newPage();
  await page.goto(provider.authorizationUrl!.href);
  await clickAndWait(page, "Approve");
  show("# the person approves on ath's consent page, then signs in at the first member (mail) as alice");
  await page.locator('input[name="login"]').fill("alice");
  await clickAndWait(page, "Approve");
  await first.transport.finishAuth(host.landings.at(-1)!.code!);
  const client = mcpClient(`${base}/mcp`, provider);
  await client.client.connect(client.transport);
  const server = client.client.getServerVersion();
  show(`# connected: serverInfo ${JSON.stringify(server)}, capabilities ${JSON.stringify(client.client.getServerCapabilities())}`);
  const list = async () => (await client.client.listTools()).tools.map((t) => t.name);
  show(`# tools/list → ${(await list()).join(", ")}`);
  for (const id of ["calendar", "files"] as const) {
    const asked = (await client.client.callTool({ name: `${id}_connect`, arguments: {} })) as { content: { text: string }[]; structuredContent?: { connect_url: string } };
    show(`# tools/call ${id}_connect → ${JSON.stringify(asked.content[0]!.text)}`);
    await page.goto(asked.structuredContent!.connect_url);
    show(`# the person opens it: ${id}'s own sign-in (${new URL(page.url()).origin === new URL(auths[id].issuer).origin ? `${id}'s OAuth server` : page.url()}), as alice`);
    await page.locator('input[name="login"]').fill("alice");
    await clickAndWait(page, "Approve");
    show(`#   ath's page: ${(await page.locator("h1").innerText()).trim()}`);
  }
  show(`# tools/list → ${(await list()).join(", ")}`);
  for (const name of ["mail_whoami", "calendar_read_mail", "files_count_mail", "mail_delete_all"]) {
    const r = (await client.client.callTool({ name, arguments: {} }).catch((e: Error) => e)) as { content?: { text: string }[] } | Error;
    show(`# tools/call ${name} → ${r instanceof Error ? r.message : JSON.stringify(r.content)}`);
  }
  for (const id of SERVERS) {
    const seen = upstreams[id].requests.filter((r) => r.active).map((r) => r.authorization!.slice(7, 17));
    show(`# ${id}'s MCP server saw ${upstreams[id].calls.map((c) => `${c.tool} as ${c.sub}`).join(", ") || "no call"}, with tokens ${[...new Set(seen)].map((t) => `${t}…`).join(", ")} (its own OAuth server's, never ath's)`);
  }
  await client.client.close();

  show(`\n$ ath admin mcp -g ${base}`);
  const cli = Bun.spawn([ensureBinary(), "admin", "mcp", "-g", base], { env: { ...process.env, ATH_ADMIN_TOKEN: gw.adminToken, NO_COLOR: "1" }, stdout: "pipe", stderr: "pipe" });
  show((await new Response(cli.stdout).text()).trimEnd());
  await cli.exited;
} finally {
  await browser.close();
  await gw.cleanup();
  await host.stop();
  for (const id of SERVERS) {
    await upstreams[id].stop();
    await auths[id].stop();
  }
}
