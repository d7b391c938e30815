/**
 * The approval page in front of a person, for an MCP client (issue 35): `dist/ath serve` before an MCP server built
 * with the official SDK; the SDK client registers — dynamically with no key, or by its client ID metadata document —
 * a person consents in Chromium, and a tool call that needs her approval is held. The page she opens must not tell her
 * the client "proved, with a signature" who it is (it signed nothing): it names the client as the consent page does —
 * "Claimed by the client — not verified by the gateway", or vouched for by its document's host.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import type { Browser, Page } from "playwright-core";
import { closeContexts, freshPage, screenshots, sharedChromium } from "../helpers/chromium.ts";
import { startGateway, type Gateway } from "../helpers/gateway.ts";
import { codeGrant, MemoryOAuthProvider, mcpClient, startClientHost } from "../helpers/mcp-oauth-client.ts";
import { freePort } from "../helpers/net.ts";
import { clickAndWait } from "../helpers/person.ts";
import { startUpstreamAuth, type UpstreamAuth } from "../helpers/upstream-auth.ts";
import { mailMcpProvider, startUpstreamMcp, type UpstreamMcp } from "../helpers/upstream-mcp.ts";

const SCOPES = ["openid", "mail:read", "mail:send"];

let auth: UpstreamAuth;
let upstream: UpstreamMcp;
let gw: Gateway;
let host: Awaited<ReturnType<typeof startClientHost>>;
let browser: Browser;
let base: string;

beforeAll(async () => {
  const port = await freePort();
  auth = await startUpstreamAuth({ redirectUris: [`http://127.0.0.1:${port}/ath/callback`], scopes: SCOPES });
  upstream = await startUpstreamMcp(auth);
  host = await startClientHost();
  const mail = {
    ...mailMcpProvider(auth, upstream, SCOPES),
    approval_rules: [{ match: ["MCP tools/call send_email"], approver: "user" as const }],
  };
  gw = await startGateway({ binary: true, port, providers: { mail } });
  base = gw.baseUrl;
  browser = await sharedChromium();
}, 120_000);

afterAll(async () => {
  await closeContexts(browser);
  await gw?.cleanup();
  await host?.stop();
  await upstream?.stop();
  await auth?.stop();
});

/** The SDK client connects (registration, consent in `page` as `login`); its access token. */
async function connect(page: Page, provider: MemoryOAuthProvider, login: string): Promise<string> {
  const url = `${base}/mcp/mail`;
  const first = mcpClient(url, provider);
  await expect(first.client.connect(first.transport)).rejects.toBeInstanceOf(UnauthorizedError);
  const before = host.landings.length;
  await page.goto(provider.authorizationUrl!.href);
  await clickAndWait(page, "Approve");
  await page.locator('input[name="login"]').fill(login);
  await clickAndWait(page, "Approve");
  await first.transport.finishAuth(host.landings[before]!.code!);
  return provider.saved!.access_token;
}

/** A held send_email's approval page, as the person sees it in `page`. */
async function heldPage(page: Page, token: string): Promise<string> {
  const headers = { authorization: `Bearer ${token}`, "content-type": "application/json", accept: "application/json, text/event-stream" };
  const init = await fetch(`${base}/mcp/mail`, { method: "POST", headers, body: JSON.stringify({ jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "raw", version: "1" } } }) });
  const session = init.headers.get("mcp-session-id")!;
  await init.body?.cancel();
  const withSession = { ...headers, "mcp-session-id": session, "mcp-protocol-version": "2025-11-25" };
  await (await fetch(`${base}/mcp/mail`, { method: "POST", headers: withSession, body: JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }) })).body?.cancel();
  const call = { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "send_email", arguments: { to: "boss@example.com", text: "hello" } } };
  const res = await fetch(`${base}/mcp/mail`, { method: "POST", headers: withSession, body: JSON.stringify(call) });
  const text = await res.text();
  const doc = JSON.parse((res.headers.get("content-type") ?? "").includes("text/event-stream") ? text.split("\n").filter((l) => l.startsWith("data: ")).at(-1)!.slice(6) : text);
  expect(doc.error?.data?.ath_error).toBe("APPROVAL_REQUIRED");
  await page.goto(doc.error.data.approval_url);
  return page.locator("main, body").first().innerText();
}

describe("who asks, on the approval page of an MCP client's call", () => {
  test("a dynamically registered client without a key: claimed, not verified — never 'proved, with a signature'", async () => {
    const { page } = await freshPage(browser);
    const token = await connect(page, new MemoryOAuthProvider(host.redirectUrl), "alice");
    const shown = await heldPage(page, token);
    await screenshots(page, "approval-mcp-client");
    expect(shown).toContain("An MCP client wants to send this request to Mail (MCP)");
    expect(shown).not.toContain("with a signature");
    expect(shown).toContain("Claimed by the client — not verified by the gateway");
    expect(shown).toContain("Test MCP Client");
    expect(shown).toContain("This client runs on your own computer");
    expect(upstream.calls.filter((c) => c.tool === "send_email")).toEqual([]);
  }, 60_000);

  test("a client known by its metadata document: vouched for by the document's host — still no signature claimed", async () => {
    // The SDK takes metadata-document client ids over https only; ath (under --dev) takes loopback http too: the code
    // grant is run by hand as the SDK runs it (tests/helpers/mcp-oauth-client.ts codeGrant).
    const { page } = await freshPage(browser);
    const { access_token: token } = await codeGrant(page, { base, clientId: host.documentUrl, redirectUri: host.redirectUrl, resource: `${base}/mcp/mail`, landings: host.landings, login: "bob" });
    const shown = await heldPage(page, token);
    expect(shown).toContain("Published at its client id — the host below vouches for it");
    expect(shown).toContain("Documented MCP Client");
    expect(shown).not.toContain("with a signature");
  }, 60_000);
});
