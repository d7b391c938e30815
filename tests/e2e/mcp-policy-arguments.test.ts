/**
 * Issue 35 finding 1, its MCP half, through the compiled `dist/ath serve` over HTTP: a `deny` rule reading
 * `mcp.arguments` (`has(mcp.arguments.to) && …`, as docs/mcp-front-door.md teaches) is not skipped by a client sending
 * `arguments` as a JSON string (or any other non-object) — an upstream that decodes it would read the denied field. The
 * rule holds as an evaluation error (DESIGN §16: fail closed), on both wires, and the upstream MCP server's own log
 * shows no request and no call. The decision alone is unit-tested in tests/unit/gateway/domain/call.test.ts.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import type { Browser } from "playwright-core";
import { closeContexts, freshPage, sharedChromium } from "../helpers/chromium.ts";
import { codeGrant, registerClient, startClientHost } from "../helpers/mcp-oauth-client.ts";
import { mailMcpProvider, startUpstreamMcp, type UpstreamMcp } from "../helpers/upstream-mcp.ts";
import { MAIL_SCOPES, startWorld, type World } from "../helpers/world.ts";

const BOSS = "boss@example.com";
let w: World;
let upstream: UpstreamMcp | undefined;
let browser: Browser;
let token: string;
let session: string;
let id = 0;

beforeAll(async () => {
  w = await startWorld({
    binary: true,
    onlyProviders: true,
    providers: async (auth) => {
      upstream = await startUpstreamMcp(auth);
      return {
        mailmcp: {
          ...mailMcpProvider(auth, upstream, MAIL_SCOPES),
          policy: [{ match: ["MCP tools/call send_email"], when: `has(mcp.arguments.to) && mcp.arguments.to == "${BOSS}"`, action: "deny", reason: "Nobody mails the boss through ath" }],
        },
      };
    },
  });
  browser = await sharedChromium();
  const host = await startClientHost();
  try {
    const clientId = await registerClient(w.baseUrl, host.redirectUrl);
    const { page } = await freshPage(browser);
    const resource = `${w.baseUrl}/mcp/mailmcp`;
    token = (await codeGrant(page, { base: w.baseUrl, clientId, redirectUri: host.redirectUrl, resource, login: "alice", landings: host.landings })).access_token;
  } finally {
    await host.stop();
  }
  const init = await post({ jsonrpc: "2.0", id: ++id, method: "initialize", params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "hostile", version: "1" } } });
  expect(init.status).toBe(200);
  session = init.headers.get("mcp-session-id")!;
  expect(session).toBeTruthy();
  await init.body?.cancel();
  const ready = await post({ jsonrpc: "2.0", method: "notifications/initialized" }, { "mcp-session-id": session });
  expect(ready.status).toBe(202);
  await ready.body?.cancel();
  // A 2026 client starts with the tool list: ath opens its bridged session at this 2025-only upstream and learns the
  // tools' schemas (its header checks need them) — upstream traffic that belongs to the list, not to a call.
  const meta = { "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {} };
  const list = await post({ jsonrpc: "2.0", id: ++id, method: "tools/list", params: { _meta: meta } }, { "mcp-protocol-version": "2026-07-28", "mcp-method": "tools/list" });
  expect((await answer(list)).result.tools.map((t: { name: string }) => t.name)).toContain("send_email");
}, 120_000);

afterAll(async () => {
  await closeContexts(browser);
  await w?.stop();
  await upstream?.stop();
});

function post(message: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${w.baseUrl}/mcp/mailmcp`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json", accept: "application/json, text/event-stream", "mcp-protocol-version": "2025-11-25", ...headers },
    body: JSON.stringify(message),
  });
}

/** One tools/call send_email on the 2025 wire (in the session) with `args` as the `arguments` member, as sent. */
async function send2025(args: unknown): Promise<{ status: number; body: Record<string, any> }> {
  const res = await post({ jsonrpc: "2.0", id: ++id, method: "tools/call", params: { name: "send_email", arguments: args } }, { "mcp-session-id": session });
  return { status: res.status, body: await answer(res) };
}

/** The same on the 2026-07-28 wire: stateless, its headers equal to the body. */
async function send2026(args: unknown): Promise<{ status: number; body: Record<string, any> }> {
  const meta = { "io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {} };
  const res = await post(
    { jsonrpc: "2.0", id: ++id, method: "tools/call", params: { name: "send_email", arguments: args, _meta: meta } },
    { "mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call", "mcp-name": "send_email" },
  );
  return { status: res.status, body: await answer(res) };
}

/** The JSON-RPC answer, whether it came as JSON or as the one event of a stream. */
async function answer(res: Response): Promise<Record<string, any>> {
  const text = await res.text();
  if (!(res.headers.get("content-type") ?? "").includes("text/event-stream")) return JSON.parse(text);
  const data = text.split("\n").find((l) => l.startsWith("data: "));
  return JSON.parse(data!.slice(6));
}

test("`arguments` as a JSON string (or any non-object) naming the denied recipient: the deny holds on both wires, the upstream sees nothing", async () => {
  const hostile = [JSON.stringify({ to: BOSS, text: "hi" }), `{"to":"${BOSS}","text":"hi","to":"${BOSS}"}`, [BOSS, "hi"], 42];
  for (const send of [send2025, send2026]) {
    for (const args of hostile) {
      const before = { requests: upstream!.requests.length, calls: upstream!.calls.length };
      const r = await send(args);
      // the policy's own refusal, naming its reason — not the upstream's schema error for a forwarded call
      expect({ wire: send.name, args, result: r.body.result, refused: JSON.stringify(r.body.error ?? null).includes("Nobody mails the boss") }).toEqual({ wire: send.name, args, result: undefined, refused: true });
      expect({ wire: send.name, args, requests: upstream!.requests.length, calls: upstream!.calls.length }).toEqual({ wire: send.name, args, ...before });
    }
  }
  expect(upstream!.calls.filter((c) => c.tool === "send_email")).toEqual([]);
});

test("the same rule, with arguments as an object: the boss is denied, anyone else is sent (the rule is what held)", async () => {
  for (const send of [send2025, send2026]) {
    const before = upstream!.calls.length;
    const denied = await send({ to: BOSS, text: "hi" });
    expect(JSON.stringify(denied.body.error)).toContain("Nobody mails the boss");
    expect(upstream!.calls.length).toBe(before);
    const sent = await send({ to: "alice@example.com", text: "hi" });
    expect({ wire: send.name, error: sent.body.error, result: sent.body.result?.content }).toEqual({ wire: send.name, error: undefined, result: [{ type: "text", text: "sent to alice@example.com" }] });
    expect(upstream!.calls.at(-1)).toMatchObject({ tool: "send_email", sub: "alice", args: { to: "alice@example.com" } });
  }
});
