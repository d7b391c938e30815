/** The sandbox MCP server (/demo/mcp): MCP 2025-11-25 Streamable HTTP over the demo notes, its tokens the sandbox's own. */
import { describe, expect, test } from "bun:test";
import { createDemo, type Demo } from "../../../../src/gateway/demo/index.ts";
import { BASE, api, tokens } from "../../../helpers/demo.ts";

const URL_ = `${BASE}/demo/mcp`;
const JSON_ACCEPT = "application/json, text/event-stream";

function post(demo: Demo, token: string | null, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return demo.fetch(
    new Request(URL_, {
      method: "POST",
      headers: { "content-type": "application/json", accept: JSON_ACCEPT, ...(token ? { authorization: `Bearer ${token}` } : {}), ...headers },
      body: typeof body === "string" ? body : JSON.stringify(body),
    }),
  );
}

const init = { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "t", version: "1" } } };

async function session(demo: Demo, token: string): Promise<string> {
  const res = await post(demo, token, init);
  expect(res.status).toBe(200);
  const id = res.headers.get("mcp-session-id");
  expect(id).toBeTruthy();
  expect((await post(demo, token, { jsonrpc: "2.0", method: "notifications/initialized" }, { "mcp-session-id": id! })).status).toBe(202);
  return id!;
}

describe("the sandbox MCP server's wire (MCP 2025-11-25 Streamable HTTP)", () => {
  test("initialize negotiates the revision, names the server and opens a session; an unknown revision gets the newest", async () => {
    const demo = createDemo({ baseUrl: BASE });
    const { access_token } = await tokens(demo);
    const res = await post(demo, access_token, init);
    expect(res.headers.get("content-type")).toBe("application/json");
    const body = await res.json();
    expect(body).toMatchObject({ jsonrpc: "2.0", id: 1, result: { protocolVersion: "2025-11-25", capabilities: { tools: {} }, serverInfo: { name: "ath-demo-notes" } } });
    const older = await (await post(demo, access_token, { ...init, params: { ...init.params, protocolVersion: "2025-06-18" } })).json();
    expect(older.result.protocolVersion).toBe("2025-06-18");
    const unknown = await (await post(demo, access_token, { ...init, params: { ...init.params, protocolVersion: "1999-01-01" } })).json();
    expect(unknown.result.protocolVersion).toBe("2025-11-25");
  });

  test("without a token, or with one the sandbox did not issue, every method is 401 with a Bearer challenge", async () => {
    const demo = createDemo({ baseUrl: BASE });
    for (const token of [null, "demo_at_forged"]) {
      const res = await post(demo, token, init);
      expect(res.status).toBe(401);
      expect(res.headers.get("www-authenticate")).toStartWith('Bearer realm="demo"');
    }
  });

  test("a request outside a session is 400; an unknown session, or another user's, is 404; DELETE ends one", async () => {
    const demo = createDemo({ baseUrl: BASE });
    const ada = (await tokens(demo)).access_token;
    const id = await session(demo, ada);
    const list = { jsonrpc: "2.0", id: 2, method: "tools/list" };
    expect((await post(demo, ada, list)).status).toBe(400);
    expect((await post(demo, ada, list, { "mcp-session-id": "nope" })).status).toBe(404);
    // a token of another demo user cannot use Ada's session
    const other = await otherUserToken(demo);
    expect((await post(demo, other, list, { "mcp-session-id": id })).status).toBe(404);
    expect((await post(demo, ada, list, { "mcp-session-id": id })).status).toBe(200);
    const del = await demo.fetch(new Request(URL_, { method: "DELETE", headers: { authorization: `Bearer ${ada}`, "mcp-session-id": id } }));
    expect(del.status).toBe(204);
    expect((await post(demo, ada, list, { "mcp-session-id": id })).status).toBe(404);
  });

  test("malformed input gets a JSON-RPC error with the right status: not JSON, a batch, bad params, an unsupported revision header, a foreign Origin, GET", async () => {
    const demo = createDemo({ baseUrl: BASE });
    const token = (await tokens(demo)).access_token;
    const id = await session(demo, token);
    const s = { "mcp-session-id": id };
    const notJson = await post(demo, token, "{", s);
    expect([notJson.status, (await notJson.json()).error.code]).toEqual([400, -32700]);
    const batch = await post(demo, token, [{ jsonrpc: "2.0", id: 1, method: "ping" }], s);
    expect([batch.status, (await batch.json()).error.code]).toEqual([400, -32600]);
    const params = await post(demo, token, { jsonrpc: "2.0", id: 3, method: "tools/call", params: [1] }, s);
    expect((await params.json()).error.code).toBe(-32602);
    const method = await post(demo, token, { jsonrpc: "2.0", id: 4, method: "resources/list" }, s);
    expect((await method.json()).error.code).toBe(-32601);
    expect((await post(demo, token, { jsonrpc: "2.0", id: 5, method: "ping" }, { ...s, "mcp-protocol-version": "1999-01-01" })).status).toBe(400);
    expect((await post(demo, token, { jsonrpc: "2.0", id: 6, method: "ping" }, { ...s, origin: "https://evil.example" })).status).toBe(403);
    const get = await demo.fetch(new Request(URL_, { headers: { authorization: `Bearer ${token}`, "mcp-session-id": id } }));
    expect([get.status, get.headers.get("allow")]).toEqual([405, "POST, DELETE"]);
    const ping = await post(demo, token, { jsonrpc: "2.0", id: 7, method: "ping" }, { ...s, "mcp-protocol-version": "2025-11-25", origin: BASE });
    expect(await ping.json()).toEqual({ jsonrpc: "2.0", id: 7, result: {} });
  });
});

describe("the sandbox MCP server's tools", () => {
  test("list_notes, add_note and delete_note work on the same notes the API serves", async () => {
    const demo = createDemo({ baseUrl: BASE });
    const token = (await tokens(demo)).access_token;
    const s = { "mcp-session-id": await session(demo, token) };
    const call = async (name: string, args: unknown) => (await (await post(demo, token, { jsonrpc: "2.0", id: 9, method: "tools/call", params: { name, arguments: args } }, s)).json()).result;
    const listed = (await (await post(demo, token, { jsonrpc: "2.0", id: 8, method: "tools/list" }, s)).json()).result.tools;
    expect(listed.map((t: { name: string }) => t.name)).toEqual(["list_notes", "add_note", "delete_note"]);
    for (const t of listed) expect(t.inputSchema.type).toBe("object");
    const added = await call("add_note", { text: "from MCP" });
    expect(added.structuredContent.text).toBe("from MCP");
    const viaApi = await (await api(demo, "GET", "/notes", token)).json();
    expect(viaApi.notes.map((n: { text: string }) => n.text)).toContain("from MCP");
    const notes = (await call("list_notes", {})).structuredContent.notes;
    expect(notes[0].text).toContain("Welcome to Demo Notes");
    expect((await call("delete_note", { id: added.structuredContent.id })).structuredContent).toEqual({ deleted: added.structuredContent.id });
    // a tool's own failures are tool results with isError, not protocol errors
    for (const [name, args] of [["add_note", { text: "" }], ["add_note", {}], ["delete_note", { id: "n_gone" }], ["delete_note", { id: 5 }], ["list_notes", "x"]] as const) {
      const r = await call(name, args);
      expect({ name, isError: r.isError }).toEqual({ name, isError: true });
    }
    const unknown = await (await post(demo, token, { jsonrpc: "2.0", id: 10, method: "tools/call", params: { name: "rm_rf" } }, s)).json();
    expect(unknown.error.code).toBe(-32602);
  });

  test("a tool whose scope the token lacks is 403 insufficient_scope naming it (MCP scope challenge)", async () => {
    const demo = createDemo({ baseUrl: BASE });
    const token = (await tokens(demo, "notes:read")).access_token;
    const s = { "mcp-session-id": await session(demo, token) };
    const res = await post(demo, token, { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "add_note", arguments: { text: "x" } } }, s);
    expect(res.status).toBe(403);
    expect(res.headers.get("www-authenticate")).toContain('error="insufficient_scope", scope="notes:write"');
    const read = await post(demo, token, { jsonrpc: "2.0", id: 2, method: "tools/call", params: { name: "list_notes", arguments: {} } }, s);
    expect(read.status).toBe(200);
  });
});

/** A token of another demo user (the sign-in page takes any name). */
async function otherUserToken(demo: Demo): Promise<string> {
  const { authorizeUrl, signIn, tokenRequest, CALLBACK } = await import("../../../helpers/demo.ts");
  const { createPkce } = await import("../../../../src/gateway/oauth/pkce.ts");
  const pkce = createPkce();
  const res = await signIn(demo, authorizeUrl(demo, {}, pkce.challenge), "allow", "Grace Hopper");
  const code = new URL(res.headers.get("location")!).searchParams.get("code")!;
  const t = await tokenRequest(demo, { grant_type: "authorization_code", code, redirect_uri: CALLBACK, code_verifier: pkce.verifier });
  return ((await t.json()) as { access_token: string }).access_token;
}
