/**
 * `ath templates`' remote-MCP template, `github-mcp`, against a mock that reproduces what GitHub documents of its
 * hosted MCP server's auth (tests/helpers/providers/github.ts): a GitHub user token as Bearer or 401, no dynamic
 * client registration. An MCP client that could not sign in to it directly registers with ath, the person signs in at
 * "GitHub" (the mock's consent page) through ath, and the MCP server gets that person's GitHub token.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import type { Browser } from "playwright-core";
import { closeContexts, freshPage, sharedChromium } from "../helpers/chromium.ts";
import { startGateway, type Gateway } from "../helpers/gateway.ts";
import { codeGrant, MemoryOAuthProvider, mcpClient, registerClient, startClientHost } from "../helpers/mcp-oauth-client.ts";
import { freePort } from "../helpers/net.ts";
import { clickAndWait, providerButton } from "../helpers/person.ts";
import type { MockProvider } from "../helpers/providers/base.ts";
import { startGitHubMock } from "../helpers/providers/github.ts";

let github: MockProvider;
let gw: Gateway;
let browser: Browser;

beforeAll(async () => {
  const port = await freePort();
  github = startGitHubMock({ redirectUris: [`http://127.0.0.1:${port}/ath/callback`] });
  // What an operator writes: the template, the OAuth app's credentials — here, the mock's URLs in place of GitHub's.
  gw = await startGateway({ port, providers: { github: { template: "github-mcp", ...github.entry, mcp: { url: `${github.core.url}/mcp/` } } } });
  browser = await sharedChromium();
});

afterAll(async () => {
  await closeContexts(browser);
  await gw?.cleanup();
  await github?.stop();
});

test("GitHub's hosted MCP server behind ath: the person signs in at GitHub through ath; the server gets their GitHub token", async () => {
  const base = gw.baseUrl;
  // Directly, the server offers an MCP client nothing to register with; through ath, the client finds ath.
  const direct = await fetch(`${github.core.url}/mcp/`, { method: "POST", body: "{}" });
  expect(direct.status).toBe(401);
  const challenge = await fetch(`${base}/mcp/github`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
  expect(challenge.headers.get("www-authenticate")).toContain(`resource_metadata="${base}/.well-known/oauth-protected-resource/mcp/github"`);
  const prm = await (await fetch(`${base}/.well-known/oauth-protected-resource/mcp/github`)).json();
  expect(prm.scopes_supported).toContain("repo");

  const host = await startClientHost();
  const clientId = await registerClient(base, host.redirectUrl, "VS Code");
  const { page } = await freshPage(browser);
  const tokens = await codeGrant(page, {
    base,
    clientId,
    redirectUri: host.redirectUrl,
    resource: `${base}/mcp/github`,
    landings: host.landings,
    upstream: async (p) => void (await clickAndWait(p, providerButton(p, "approve"))),
  });
  const provider = new MemoryOAuthProvider(host.redirectUrl);
  provider.info = { client_id: clientId };
  provider.saved = tokens;
  const { client, transport } = mcpClient(`${base}/mcp/github`, provider);
  await client.connect(transport);
  expect((await client.listTools()).tools.map((t) => t.name)).toEqual(["get_me"]);
  const me = await client.callTool({ name: "get_me", arguments: {} });
  expect(JSON.parse((me.content as { text: string }[])[0]!.text)).toMatchObject({ login: "octo-person", id: 4242 });
  await client.close();
  await host.stop();

  // The authorize request GitHub saw was the template's (PKCE S256, ath's callback); the MCP server saw GitHub's token.
  const authorize = github.core.requests.find((r) => r.route === "authorize")!;
  expect(authorize.query.get("code_challenge_method")).toBe("S256");
  expect(authorize.query.get("redirect_uri")).toBe(`${base}/ath/callback`);
  const mcp = github.core.requests.filter((r) => r.route === "mcp" && r.status === 200);
  expect(mcp.length).toBeGreaterThanOrEqual(3);
  for (const r of mcp) expect(r.headers.get("authorization")).toStartWith("Bearer gho_");
});
