/**
 * Bridging MCP's wires (DESIGN §21), in process before the reference MCP server in its one-wire variants (the whole
 * conformance suite runs bridged in tests/e2e/mcp-wires.test.ts, on one instance and two):
 * - a 2026 client in front of a 2025-only upstream: the upstream session ath holds is per person (and client), found
 *   again for the next request, and re-opened transparently when the upstream forgot it (404);
 * - a 2025 client in front of a 2026-only upstream: the session is ath's own — `initialize` answered from the upstream's
 *   `server/discover`, bound to the client and the person like any session, ended by DELETE.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { envelope, mcpGrant, mcpWorld, post, standard, toolCall, type McpWorld } from "../../../helpers/mcp-in-process.ts";

let w: McpWorld;
afterEach(() => w.close());

describe("a 2026 client in front of a 2025-only upstream", () => {
  test("ath holds one upstream session per person, finds it for the next call, and re-opens it when the upstream answers 404", async () => {
    w = await mcpWorld({ wires: "2025" });
    const alice = await mcpGrant(w.g);
    const bob = await mcpGrant(w.g, { clientId: alice.clientId });
    const initializes = () => w.upstream.requests.filter((r) => r.rpc === "initialize").length;
    const simple = async (token: string) => (await toolCall(w.g, token, "test_simple_text", {})).json.result?.content?.[0]?.text;
    expect(await simple(alice.token)).toBe("This is a simple text response for testing.");
    const afterFirst = initializes();
    expect(await simple(alice.token)).toBe("This is a simple text response for testing.");
    expect(initializes()).toBe(afterFirst); // the same session, found in the store
    expect(await simple(bob.token)).toBe("This is a simple text response for testing.");
    expect(initializes()).toBe(afterFirst + 1); // another person: a session of their own
    const sessions = new Set(w.upstream.requests.filter((r) => r.rpc === "tools/call").map((r) => r.sessionId));
    expect(sessions.size).toBe(2);
    // the upstream forgets every session (a restart): the next call is answered all the same, on a new one
    for (const t of w.upstream.sessions.values()) await t.close();
    expect(await simple(alice.token)).toBe("This is a simple text response for testing.");
    expect(initializes()).toBe(afterFirst + 2);
    const last = w.upstream.requests.filter((r) => r.rpc === "tools/call").slice(-2);
    expect(last[0]!.sessionId).not.toBe(last[1]!.sessionId);
  });

  test("server/discover is answered from the upstream's initialize; a method 2026 lacks is 404 -32601; no envelope is 400 -32602", async () => {
    w = await mcpWorld({ wires: "2025" });
    const { token } = await mcpGrant(w.g);
    const discovered = await post(w.g, token, { jsonrpc: "2.0", id: 1, method: "server/discover", params: { _meta: envelope() } }, standard("server/discover"));
    expect(discovered.json.result).toMatchObject({ supportedVersions: ["2026-07-28"], _meta: { "io.modelcontextprotocol/serverInfo": { name: "ath-reference-mcp" } }, resultType: "complete" });
    const ping = await post(w.g, token, { jsonrpc: "2.0", id: 2, method: "ping", params: { _meta: envelope() } }, standard("ping"));
    expect([ping.status, ping.json.error?.code]).toEqual([404, -32601]);
    const bare = await post(w.g, token, { jsonrpc: "2.0", id: 3, method: "tools/list", params: {} }, standard("tools/list"));
    expect([bare.status, bare.json.error?.code, bare.json.id]).toEqual([400, -32602, 3]);
  });
});

describe("a 2025 client in front of a 2026-only upstream", () => {
  test("initialize is answered by ath from server/discover with a session of ath's; the calls go to the upstream as 2026 requests; another person is 404; DELETE ends it", async () => {
    w = await mcpWorld({ wires: "2026" });
    const alice = await mcpGrant(w.g);
    const init = { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "old", version: "1" } } };
    const opened = await post(w.g, alice.token, init);
    const sid = opened.headers.get("mcp-session-id")!;
    expect(sid).toStartWith("ath-mcps-");
    expect(opened.json.result).toMatchObject({ protocolVersion: "2025-06-18", serverInfo: { name: "ath-reference-mcp" } });
    const on = (token: string, body: Record<string, unknown>) => post(w.g, token, body, { "mcp-session-id": sid, "mcp-protocol-version": "2025-06-18" });
    expect((await on(alice.token, { jsonrpc: "2.0", method: "notifications/initialized" })).status).toBe(202);
    expect((await on(alice.token, { jsonrpc: "2.0", id: 2, method: "ping" })).json.result).toEqual({});
    const call = await on(alice.token, { jsonrpc: "2.0", id: 3, method: "tools/call", params: { name: "test_x_mcp_header", arguments: { region: "eu" } } });
    expect(call.json).toEqual({ jsonrpc: "2.0", id: 3, result: { content: [{ type: "text", text: "region=eu" }] } });
    // the upstream got a 2026 request, its headers (Mcp-Param-Region from the tool's schema) right: it checks them
    const sent = w.upstream.requests.filter((r) => r.rpc === "tools/call").at(-1)!;
    expect([sent.protocolVersion, sent.mcpMethod, sent.sessionId]).toEqual(["2026-07-28", "tools/call", null]);
    const bob = await mcpGrant(w.g, { clientId: alice.clientId });
    expect((await on(bob.token, { jsonrpc: "2.0", id: 4, method: "ping" })).status).toBe(404);
    const ended = await w.g.fetch("/mcp/mail", { method: "DELETE", headers: { authorization: `Bearer ${alice.token}`, "mcp-session-id": sid } });
    expect(ended.status).toBe(200);
    expect((await on(alice.token, { jsonrpc: "2.0", id: 5, method: "ping" })).status).toBe(404);
  });
});
