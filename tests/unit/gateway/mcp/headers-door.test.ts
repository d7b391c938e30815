/**
 * The 2026-07-28 wire's headers at `/mcp/{id}` (DESIGN §21), in process in front of the reference MCP server: a header
 * missing or disagreeing with the body is 400 JSON-RPC -32020 (`data.reason`), decided before policy, budgets, audit
 * counts or any upstream I/O — what reached the upstream, what was counted and audited is checked after each refusal —
 * and a policy that refuses tool X (or an argument's value) is not sidestepped by headers naming something else.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mcpGrant, mcpWorld, post, envelope, standard, toolCall, type McpWorld } from "../../../helpers/mcp-in-process.ts";

let w: McpWorld;
let token: string;
const b64 = (s: string) => `=?base64?${Buffer.from(s).toString("base64")}?=`;

beforeAll(async () => {
  w = await mcpWorld({
    over: {
      budgets: [{ match: ["MCP tools/call test_x_mcp_header"], limit: 1000, window: "1d" }],
      policy: [
        { match: ["MCP tools/call test_error_handling"], action: "deny", reason: "no errors here" },
        { match: ["MCP tools/call test_x_mcp_header"], when: 'has(mcp.arguments.region) && mcp.arguments.region == "eu"', action: "deny", reason: "not in the EU" },
      ],
    },
  });
  ({ token } = await mcpGrant(w.g));
});
afterAll(() => w.close());

/** What the door did: tool calls that reached the upstream, budget counts, mcp.call audit records. */
async function traces() {
  const counted = (await w.g.gw.store.listBudgetUsage({ now: w.g.clock.now() })).reduce((n, u) => n + u.used, 0);
  return { reached: w.upstream.surface.seen.length, calls: w.upstream.requests.filter((r) => r.rpc === "tools/call").length, counted, audited: await w.g.audited("mcp.call") };
}

describe("2026 header checks, before anything else", () => {
  test("every mismatch shape is 400 with -32020, the request's id and data.reason; nothing reaches the upstream, nothing is counted or audited", async () => {
    // a first honest call: the tool's schema is learnt (a tools/list of ath's), one call reaches the upstream
    expect((await toolCall(w.g, token, "test_x_mcp_header", { region: "us" }, { headers: { "mcp-param-region": "us" } })).json.result.content[0].text).toBe("region=us");
    const before = await traces();
    const cases: [string, Record<string, string>, Record<string, unknown>, "header_missing" | "header_mismatch", string][] = [
      ["no Mcp-Method", { "mcp-method": "" }, {}, "header_missing", "Mcp-Method"],
      ["another Mcp-Method", { "mcp-method": "prompts/list" }, {}, "header_mismatch", "Mcp-Method"],
      ["Mcp-Method in another case", { "mcp-method": "TOOLS/CALL" }, {}, "header_mismatch", "Mcp-Method"],
      ["no MCP-Protocol-Version", { "mcp-protocol-version": "" }, {}, "header_missing", "MCP-Protocol-Version"],
      ["another MCP-Protocol-Version than _meta's", { "mcp-protocol-version": "2099-01-01" }, {}, "header_mismatch", "MCP-Protocol-Version"],
      ["no Mcp-Name", { "mcp-name": "" }, {}, "header_missing", "Mcp-Name"],
      ["Mcp-Name naming another tool", { "mcp-name": "test_simple_text" }, {}, "header_mismatch", "Mcp-Name"],
      ["Mcp-Name naming another tool in base64", { "mcp-name": b64("test_simple_text") }, {}, "header_mismatch", "Mcp-Name"],
      ["Mcp-Name with a broken base64 sentinel", { "mcp-name": "=?base64?dGVzd!!?=" }, {}, "header_mismatch", "Mcp-Name"],
      ["Mcp-Name with base64 lacking its padding", { "mcp-name": "=?base64?dGVzdA?=" }, {}, "header_mismatch", "Mcp-Name"],
      ["Mcp-Name sent twice (joined)", { "mcp-name": "test_x_mcp_header, test_simple_text" }, {}, "header_mismatch", "Mcp-Name"],
      ["no Mcp-Param-Region while the body has region", {}, { region: "eu" }, "header_missing", "Mcp-Param-Region"],
      ["Mcp-Param-Region saying another region", { "mcp-param-region": "us" }, { region: "eu" }, "header_mismatch", "Mcp-Param-Region"],
      ["Mcp-Param-Region in base64 saying another region", { "mcp-param-region": b64("us") }, { region: "eu" }, "header_mismatch", "Mcp-Param-Region"],
    ];
    for (const [name, headers, args, reason, header] of cases) {
      const drop = Object.entries(headers).filter(([, v]) => v === "").map(([k]) => k);
      const given = Object.fromEntries(Object.entries(headers).filter(([, v]) => v !== ""));
      const body = { jsonrpc: "2.0", id: 77, method: "tools/call", params: { name: "test_x_mcp_header", arguments: args, _meta: envelope() } };
      const sent = { ...standard("tools/call", "test_x_mcp_header"), ...given };
      for (const d of drop) delete sent[d];
      const r = await post(w.g, token, body, sent);
      expect({ name, status: r.status, code: r.json.error?.code, id: r.json.id, reason: r.json.error?.data?.reason, header: r.json.error?.data?.header }).toEqual({
        name,
        status: 400,
        code: -32020,
        id: 77,
        reason,
        header,
      });
    }
    expect(await traces()).toEqual(before);
  });

  test("headers as the spec allows them pass: names in any case, values with surrounding whitespace, base64, a null argument without its header", async () => {
    const ok = async (headers: Record<string, string>, args: Record<string, unknown>) => (await toolCall(w.g, token, "test_x_mcp_header", args, { headers })).json.result?.content?.[0]?.text;
    expect(await ok({ "MCP-NAME": "  test_x_mcp_header  ", "mcp-param-region": "us" }, { region: "us" })).toBe("region=us");
    expect(await ok({ "mcp-param-region": b64("ünïcode") }, { region: "ünïcode" })).toBe("region=ünïcode");
    expect(await ok({ "mcp-name": b64("test_x_mcp_header"), "mcp-param-region": "us" }, { region: "us" })).toBe("region=us");
    expect(await ok({}, {})).toBe("region=<none>");
    // a null argument needs no header (MCP: the server "MUST NOT expect" it): the call reaches the upstream, which
    // judges its arguments itself
    expect(await ok({}, { region: null })).toMatch(/region must be string/);
  });

  test("a body that is not one message, or a response, is refused as invalid on the 2026 wire, nothing sent", async () => {
    const before = await traces();
    const batch = await post(w.g, token, [{ jsonrpc: "2.0", id: 1, method: "tools/list", params: { _meta: envelope() } }], standard("tools/list"));
    expect([batch.status, batch.json.error?.code]).toEqual([400, -32600]);
    const response = await post(w.g, token, { jsonrpc: "2.0", id: 1, result: {}, params: { _meta: envelope() } }, standard("tools/list"));
    expect([response.status, response.json.error?.code]).toEqual([400, -32600]);
    expect(await traces()).toEqual(before);
  });
});

describe("policy reads the body, never the headers", () => {
  test("a policy refusing tool X is not sidestepped by headers naming tool Y, nor Y by headers naming X", async () => {
    const before = await traces();
    const asY = await toolCall(w.g, token, "test_error_handling", {}, { headers: { "mcp-name": "test_simple_text" } });
    expect([asY.status, asY.json.error?.code, asY.json.error?.data?.reason]).toEqual([400, -32020, "header_mismatch"]);
    const honest = await toolCall(w.g, token, "test_error_handling", {});
    expect([honest.status, honest.json.error?.code, honest.json.error?.data?.ath_error, honest.json.error?.data?.reason]).toEqual([200, -32001, "POLICY_DENIED", "no errors here"]);
    const xAsY = await toolCall(w.g, token, "test_simple_text", {}, { headers: { "mcp-name": "test_error_handling" } });
    expect([xAsY.status, xAsY.json.error?.code]).toEqual([400, -32020]);
    expect((await traces()).calls).toBe(before.calls);
  });

  test("a policy over an argument is not sidestepped by an Mcp-Param header saying another value", async () => {
    const before = await traces();
    const routedUs = await toolCall(w.g, token, "test_x_mcp_header", { region: "eu" }, { headers: { "mcp-param-region": "us" } });
    expect([routedUs.status, routedUs.json.error?.data?.reason]).toEqual([400, "header_mismatch"]);
    const denied = await toolCall(w.g, token, "test_x_mcp_header", { region: "eu" }, { headers: { "mcp-param-region": "eu" } });
    expect([denied.json.error?.data?.ath_error, denied.json.error?.data?.reason]).toEqual(["POLICY_DENIED", "not in the EU"]);
    expect((await traces()).calls).toBe(before.calls);
  });
});

describe("lists on the 2026 wire", () => {
  test("a tool list ath filtered per person carries ttlMs (at most 60 s) and cacheScope private; a tool a deny refuses whatever its arguments is not listed", async () => {
    const r = await post(w.g, token, { jsonrpc: "2.0", id: 3, method: "tools/list", params: { _meta: envelope() } }, standard("tools/list"));
    const names = (r.json.result.tools as { name: string }[]).map((t) => t.name);
    expect(names).toContain("test_x_mcp_header");
    expect(names).not.toContain("test_error_handling");
    // the reference server says 0 (not cacheable): ath never lengthens it
    expect({ ttlMs: r.json.result.ttlMs, cacheScope: r.json.result.cacheScope, resultType: r.json.result.resultType }).toEqual({ ttlMs: 0, cacheScope: "private", resultType: "complete" });
  });
});
