/** Policy in MCP terms (DESIGN §18): the match keys, what needs no scope, step-up, approvals, and canonical arguments. */
import { describe, expect, test } from "bun:test";
import { canonicalJson } from "../../../../src/gateway/mcp/approval.ts";
import { callOf, decideMcpCall, matchKey, mcpRuleMatches } from "../../../../src/gateway/mcp/policy.ts";
import { ProviderConfig, type ProviderConfigInput } from "../../../../src/protocol/index.ts";
import type { TokenRecord } from "../../../../src/store/types.ts";

const base: ProviderConfigInput = {
  display_name: "Mail", available_scopes: ["read", "send"], authorize_endpoint: "https://p.example/a", token_endpoint: "https://p.example/t",
  client_id: "c", client_secret: "s", mcp: { url: "https://mcp.example/mcp" },
};
const config = (over: Partial<ProviderConfigInput> = {}) => ProviderConfig.parse({ ...base, ...over });
const token = (scopes: string[]) => ({ scopes }) as TokenRecord;
const call = (method: string, params?: unknown) => callOf(method, params);

describe("match keys and rules", () => {
  test("the name is the tool, the prompt or the resource URI", () => {
    expect(matchKey(call("tools/call", { name: "send_email", arguments: { to: "x" } }))).toBe("MCP tools/call send_email");
    expect(matchKey(call("prompts/get", { name: "summary" }))).toBe("MCP prompts/get summary");
    expect(matchKey(call("resources/read", { uri: "file:///a/b" }))).toBe("MCP resources/read file:///a/b");
    expect(matchKey(call("tools/list"))).toBe("MCP tools/list");
    expect(call("tools/call", { name: 42 }).name).toBeNull();
  });

  test("`*` is one segment, `**` any; no name matches every call of the method; HTTP rules never match", () => {
    const send = call("tools/call", { name: "send_email" });
    expect(mcpRuleMatches("MCP tools/call send_email", send)).toBe(true);
    expect(mcpRuleMatches("MCP tools/call *", send)).toBe(true);
    expect(mcpRuleMatches("MCP tools/call", send)).toBe(true);
    expect(mcpRuleMatches("MCP tools/call read_mail", send)).toBe(false);
    expect(mcpRuleMatches("MCP prompts/get *", send)).toBe(false);
    expect(mcpRuleMatches("POST /tools/call/send_email", send)).toBe(false);
    const read = call("resources/read", { uri: "repo://octo/hello/README.md" });
    expect(mcpRuleMatches("MCP resources/read **", read)).toBe(true);
    expect(mcpRuleMatches("MCP resources/read repo:/*", read)).toBe(false);
  });

  test("provider config takes MCP rules and refuses malformed ones, naming the grammar", () => {
    expect(() => config({ scope_rules: { read: ["MCP tools/call *", "MCP resources/read **", "GET /v1/**"] } })).not.toThrow();
    expect(() => config({ scope_rules: { read: ["MCP Tools/Call x"] } })).toThrow(/MCP <method> <name>/);
    expect(() => config({ approval_rules: [{ match: ["MCP tools/call send_email"] }] })).not.toThrow();
  });
});

describe("decideMcpCall", () => {
  const rules = { scope_rules: { read: ["MCP tools/call read_mail"], send: ["MCP tools/call send_email"] } };

  test("initialize, ping, notifications and tools/list need no scope", () => {
    for (const method of ["initialize", "ping", "notifications/initialized", "notifications/cancelled", "tools/list"]) {
      expect(decideMcpCall(config(rules), null, token([]), call(method), true)).toEqual({ kind: "allow" });
    }
  });

  test("a call the token lacks scope for: step-up naming the token's scopes and those that allow it", () => {
    expect(decideMcpCall(config(rules), null, token(["read"]), call("tools/call", { name: "read_mail" }), false)).toEqual({ kind: "allow" });
    expect(decideMcpCall(config(rules), null, token(["read"]), call("tools/call", { name: "send_email" }), false)).toEqual({ kind: "step_up", scopes: ["read", "send"] });
  });

  test("a call no scope allows is refused; without MCP rules everything is allowed, unless --strict-scopes", () => {
    expect(decideMcpCall(config(rules), null, token(["read", "send"]), call("tools/call", { name: "drop_all" }), false)).toMatchObject({ kind: "deny", code: "SCOPE_NOT_APPROVED" });
    expect(decideMcpCall(config(), null, token(["read"]), call("tools/call", { name: "drop_all" }), false)).toEqual({ kind: "allow" });
    expect(decideMcpCall(config(), null, token(["read"]), call("tools/call", { name: "drop_all" }), true)).toMatchObject({ kind: "deny" });
    // HTTP-only rules (a REST template) do not judge MCP calls
    expect(decideMcpCall(config({ scope_rules: { read: ["GET /v1/**"] } }), null, token(["read"]), call("tools/call", { name: "x" }), false)).toEqual({ kind: "allow" });
  });

  test("approval rules, the provider's then the agent's, after scope", () => {
    const c = config({ ...rules, approval_rules: [{ match: ["MCP tools/call send_email"], approver: "admin" }] });
    expect(decideMcpCall(c, null, token(["send"]), call("tools/call", { name: "send_email" }), false)).toMatchObject({ kind: "approve", rule: { approver: "admin", ttl: 300 } });
    const agent = { approval_rules: [{ match: ["MCP tools/call read_mail"], approver: "user" as const, ttl: 60 }] } as Parameters<typeof decideMcpCall>[1];
    expect(decideMcpCall(c, agent, token(["read"]), call("tools/call", { name: "read_mail" }), false)).toMatchObject({ kind: "approve", rule: { ttl: 60 } });
    // scope first: a call the token cannot make is a step-up, not an approval
    expect(decideMcpCall(c, null, token(["read"]), call("tools/call", { name: "send_email" }), false)).toMatchObject({ kind: "step_up" });
  });
});

test("arguments are compared as canonical JSON: key order does not matter, values do", () => {
  expect(canonicalJson({ b: 1, a: { d: [1, { y: 2, x: 1 }], c: null } })).toBe('{"a":{"c":null,"d":[1,{"x":1,"y":2}]},"b":1}');
  expect(canonicalJson(undefined)).toBe("null");
  expect(canonicalJson({ to: "a" })).not.toBe(canonicalJson({ to: "b" }));
});
