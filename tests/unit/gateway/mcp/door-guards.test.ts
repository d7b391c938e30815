/**
 * The MCP door's guards before any call is judged, in process in front of the reference MCP server:
 * - DNS rebinding (DESIGN §21, issue 35 #12): a foreign `Origin` is 403 with a JSON-RPC error without `id`, on both
 *   wires, before the token is even read; `--mcp-allowed-origins` adds origins; on a gateway whose base URL is loopback
 *   a non-loopback `Host` is refused the same way (origin.ts, called directly: the in-process gateway is not loopback);
 * - sessions (issue 35 #9): a 2025 session is bound to the client and the person who opened it — anyone else
 *   presenting its id gets MCP's 404 for an unknown session, and the upstream sees nothing of it.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Gateway } from "../../../../src/gateway/context.ts";
import { JsonRpcError } from "../../../../src/gateway/http/errors.ts";
import { requireOwnOrigin } from "../../../../src/gateway/mcp/origin.ts";
import { envelope, mcpGrant, mcpWorld, post, standard, type McpGrant, type McpWorld } from "../../../helpers/mcp-in-process.ts";

let w: McpWorld;
let alice: McpGrant;

beforeAll(async () => {
  w = await mcpWorld();
  alice = await mcpGrant(w.g);
});
afterAll(() => w.close());

const discover = (headers: Record<string, string>, token: string | null = alice.token) =>
  post(w.g, token, { jsonrpc: "2.0", id: 1, method: "server/discover", params: { _meta: envelope() } }, { ...standard("server/discover"), ...headers });
const initialize = (grant: McpGrant, headers: Record<string, string> = {}) =>
  post(w.g, grant.token, { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "t", version: "1" } } }, headers);

describe("Origin at /mcp/*", () => {
  test("a foreign Origin is 403 with a JSON-RPC error without id — on both wires, with or without a token — and nothing reaches the upstream", async () => {
    const before = w.upstream.requests.length;
    for (const origin of ["https://evil.example", "null", "https://gateway.test.evil.example", "http://gateway.test"]) {
      for (const r of [await discover({ origin }), await discover({ origin }, null), await initialize(alice, { origin })]) {
        expect(r.status).toBe(403);
        expect("id" in r.json).toBe(false);
        expect(r.json.error).toMatchObject({ code: -32000, data: { reason: "origin_not_allowed" } });
      }
    }
    expect(w.upstream.requests.length).toBe(before);
  });

  test("the gateway's own origin passes, as does no Origin (a client that is not a browser)", async () => {
    expect((await discover({ origin: "https://gateway.test" })).status).toBe(200);
    expect((await discover({})).status).toBe(200);
  });

  test("--mcp-allowed-origins adds origins; a loopback gateway refuses a Host that is not loopback, a public one does not look", () => {
    const gw = (baseUrl: string, mcpAllowedOrigins?: string[]) => ({ opts: { baseUrl, mcpAllowedOrigins } }) as unknown as Gateway;
    const req = (headers: Record<string, string>) => new Request("http://x/mcp/mail", { headers });
    const refusal = (g: Gateway, headers: Record<string, string>) => {
      try {
        requireOwnOrigin(g, req(headers));
        return null;
      } catch (e) {
        return e instanceof JsonRpcError ? `${e.status} ${String(e.data?.reason)}` : String(e);
      }
    };
    const pub = gw("https://ath.example.com", ["https://app.example"]);
    expect(refusal(pub, { origin: "https://app.example" })).toBeNull();
    expect(refusal(pub, { origin: "https://APP.example" })).toBeNull();
    expect(refusal(pub, { origin: "https://app.example:8443" })).toBe("403 origin_not_allowed");
    expect(refusal(pub, { host: "internal-name:8080" })).toBeNull();
    const local = gw("http://127.0.0.1:8787");
    for (const host of ["127.0.0.1:8787", "localhost:8787", "[::1]:8787", "foo.localhost"]) expect(refusal(local, { host })).toBeNull();
    for (const host of ["evil.example.com:8787", "127.0.0.1.evil.example", ""]) expect(refusal(local, { host })).toBe("403 host_not_allowed");
    expect(refusal(local, { host: "127.0.0.1:8787", origin: "http://evil.example.com:8787" })).toBe("403 origin_not_allowed");
  });
});

describe("a 2025 session belongs to the client and the person who opened it", () => {
  test("another person of the same client, or another client of the same person, presenting the session id gets 404 and the upstream sees nothing of it", async () => {
    const opened = await initialize(alice);
    const sid = opened.headers.get("mcp-session-id")!;
    expect(sid).toBeTruthy();
    const ping = (grant: McpGrant) => post(w.g, grant.token, { jsonrpc: "2.0", id: 2, method: "tools/list" }, { "mcp-session-id": sid, "mcp-protocol-version": "2025-11-25" });
    const bob = await mcpGrant(w.g, { clientId: alice.clientId });
    const aliceElsewhere = await mcpGrant(w.g, { browser: alice.browser });
    const before = w.upstream.requests.filter((r) => r.sessionId === sid).length;
    for (const other of [bob, aliceElsewhere]) {
      const r = await ping(other);
      expect([r.status, r.json.error?.code, r.json.error?.message]).toEqual([404, -32001, "Session not found"]);
    }
    const forged = await post(w.g, alice.token, { jsonrpc: "2.0", id: 3, method: "tools/list" }, { "mcp-session-id": "not-a-session", "mcp-protocol-version": "2025-11-25" });
    expect(forged.status).toBe(404);
    expect(w.upstream.requests.filter((r) => r.sessionId === sid).length).toBe(before);
    expect((await ping(alice)).json.result.tools.length).toBeGreaterThan(0);
  });
});
