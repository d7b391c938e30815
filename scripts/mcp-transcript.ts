/**
 * Prints a real transcript of the MCP front door (docs/mcp-front-door.md): oidc-provider as the upstream OAuth server,
 * an MCP server built with the official SDK behind it, `ath serve` in front, and the official SDK client whose
 * person consents in headless Chromium. Run: `bun scripts/mcp-transcript.ts` (needs Debian's chromium).
 */
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import { freshPage, launchChromium } from "../tests/helpers/chromium.ts";
import { startGateway } from "../tests/helpers/gateway.ts";
import { MemoryOAuthProvider, mcpClient, startClientHost } from "../tests/helpers/mcp-oauth-client.ts";
import { freePort } from "../tests/helpers/net.ts";
import { clickAndWait } from "../tests/helpers/person.ts";
import { startUpstreamAuth } from "../tests/helpers/upstream-auth.ts";
import { startUpstreamMcp } from "../tests/helpers/upstream-mcp.ts";

const SCOPES = ["openid", "offline_access", "mail:read", "mail:send"];
const port = await freePort();
const auth = await startUpstreamAuth({ redirectUris: [`http://127.0.0.1:${port}/ath/callback`], scopes: SCOPES });
const upstream = await startUpstreamMcp(auth);
const host = await startClientHost();
const gw = await startGateway({
  port,
  providers: {
    mail: {
      display_name: "Mail (MCP)",
      available_scopes: SCOPES,
      authorize_endpoint: auth.authorizeEndpoint,
      token_endpoint: auth.tokenEndpoint,
      client_id: auth.postClient.client_id,
      client_secret: auth.postClient.client_secret,
      mcp: { url: upstream.url },
      scope_rules: { "mail:read": ["MCP tools/call whoami", "MCP tools/call read_mail"], "mail:send": ["MCP tools/call send_email"] },
      approval_rules: [{ match: ["MCP tools/call send_email"], approver: "user" }],
    },
  },
});
const base = gw.baseUrl;
const show = (s: string) => console.log(s.replaceAll(base, "https://ath.example.com"));
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
} finally {
  await browser.close();
  await gw.cleanup();
  await host.stop();
  await upstream.stop();
  await auth.stop();
}
