/** Policy in MCP terms (DESIGN §18): the match keys, what needs no scope, step-up, approvals, and canonical arguments. */
import { describe, expect, test } from "bun:test";
import { canonicalJson } from "../../../../src/gateway/mcp/approval.ts";
import { callOf, decideMcpCall, listable, matchKey, mcpRuleMatches } from "../../../../src/gateway/mcp/policy.ts";
import { filterToolLists } from "../../../../src/gateway/mcp/tools-list.ts";
import { policyProblems } from "../../../../src/gateway/rules/conditions.ts";
import { ProviderConfig, type ProviderConfigInput } from "../../../../src/protocol/index.ts";
import type { TokenRecord } from "../../../../src/store/types.ts";

const base: ProviderConfigInput = {
  display_name: "Mail", available_scopes: ["read", "send"], authorize_endpoint: "https://p.example/a", token_endpoint: "https://p.example/t",
  client_id: "c", client_secret: "s", mcp: { url: "https://mcp.example/mcp" },
};
const config = (over: Partial<ProviderConfigInput> = {}) => ProviderConfig.parse({ ...base, ...over });
const token = (scopes: string[]) => ({ scopes, agent_id: "ag", client_id: "cl", user_id: "alice", provider_id: "mail" }) as TokenRecord;
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

describe("policy rules in MCP terms", () => {
  const policy = (rules: unknown[]) => config({ policy: rules as ProviderConfigInput["policy"] });
  const send = (args: unknown) => call("tools/call", { name: "send_email", arguments: args });

  test("CEL over mcp.arguments decides: deny with the rule's reason, approve, allow; the first that holds wins", () => {
    const c = policy([
      { match: ["MCP tools/call send_email"], when: 'mcp.arguments.to.endsWith("@rival.example")', action: "deny", reason: "not to rivals" },
      { match: ["MCP tools/call *"], when: 'mcp.tool == "send_email" && size(mcp.arguments.to) > 20', action: "approve", approver: "admin" },
    ]);
    expect(decideMcpCall(c, null, token([]), send({ to: "a@rival.example" }), false)).toMatchObject({ kind: "deny", code: "POLICY_DENIED", reason: "not to rivals", data: { rule: { from: "provider", index: 0 } } });
    expect(decideMcpCall(c, null, token([]), send({ to: "someone-long@friends.example" }), false)).toMatchObject({ kind: "approve", rule: { approver: "admin" } });
    expect(decideMcpCall(c, null, token([]), send({ to: "a@friends.example" }), false)).toEqual({ kind: "allow" });
    // both hold (a rival's address longer than 20 characters): the first rule decides
    expect(decideMcpCall(c, null, token([]), send({ to: "someone-long@rival.example" }), false)).toMatchObject({ kind: "deny", reason: "not to rivals" });
    // HTTP rules never judge an MCP call
    expect(decideMcpCall(policy([{ match: ["POST /send"], action: "deny" }]), null, token([]), send({}), false)).toEqual({ kind: "allow" });
  });

  test("an evaluation error fails closed: a deny or approve holds, an allow does not", () => {
    const deny = policy([{ match: ["MCP tools/call send_email"], when: 'mcp.arguments.to.endsWith("x")', action: "deny" }]);
    expect(decideMcpCall(deny, null, token([]), send({}), false)).toMatchObject({ kind: "deny", data: { evaluation_error: expect.any(String) } });
    const allowFirst = policy([
      { match: ["MCP tools/call send_email"], when: 'mcp.arguments.to.endsWith("x")', action: "allow" },
      { match: ["MCP tools/call send_email"], action: "approve" },
    ]);
    expect(decideMcpCall(allowFirst, null, token([]), send({}), false)).toMatchObject({ kind: "approve" });
  });

  test("the agent's rules follow the provider's; user, agent and token are there", () => {
    const agent = { policy: [{ match: ["MCP tools/call *"], when: 'user.id == "alice" && "send" in token.scopes', action: "deny", reason: "alice sends nothing", approver: "user", ttl: 300 }] } as unknown as Parameters<typeof decideMcpCall>[1];
    expect(decideMcpCall(config(), agent, token(["send"]), send({}), false)).toMatchObject({ kind: "deny", reason: "alice sends nothing", data: { rule: { from: "agent" } } });
    expect(decideMcpCall(config(), agent, token(["read"]), send({}), false)).toEqual({ kind: "allow" });
  });

  test("`mcp` compiles in MCP rules only, `request` in HTTP rules only; a rule mixing both may name either", () => {
    expect(policyProblems([{ match: ["MCP tools/call x"], when: 'mcp.tool == "x"', action: "deny", approver: "user", ttl: 300 }], "policy")).toEqual([]);
    expect(policyProblems([{ match: ["POST /x"], when: 'mcp.tool == "x"', action: "deny", approver: "user", ttl: 300 }], "policy")[0]).toMatch(/^policy\.0\.when: .*mcp/);
    expect(policyProblems([{ match: ["MCP tools/call x"], when: 'request.path == "/x"', action: "deny", approver: "user", ttl: 300 }], "policy")[0]).toMatch(/request/);
    expect(policyProblems([{ match: ["MCP tools/call x", "POST /x"], when: 'request.path == "/x" || mcp.tool == "x"', action: "deny", approver: "user", ttl: 300 }], "policy")).toEqual([]);
  });

  test("tools/list hides a tool only when every call of it is refused, whatever its arguments", () => {
    const c = config({
      scope_rules: { read: ["MCP tools/call read_mail", "MCP tools/call drop_all", "MCP tools/call maybe"], send: ["MCP tools/call send_email"] },
      policy: [
        { match: ["MCP tools/call drop_all"], action: "deny" },
        { match: ["MCP tools/call maybe"], when: 'user.id == "alice"', action: "deny" },
        { match: ["MCP tools/call send_email"], when: 'mcp.arguments.to == "x"', action: "deny" },
      ] as ProviderConfigInput["policy"],
    });
    const t = token(["read"]);
    expect(listable(c, null, t, "drop_all", false)).toBe(false); // no `when`
    expect(listable(c, null, t, "maybe", false)).toBe(false); // a `when` that does not read the arguments, holding
    expect(listable(c, null, { ...t, user_id: "bob" }, "maybe", false)).toBe(true);
    expect(listable(c, null, t, "send_email", false)).toBe(true); // the token lacks its scope (step-up), and the deny reads arguments
    expect(listable(c, null, t, "read_mail", false)).toBe(true);
    expect(listable(c, null, t, "unknown_tool", false)).toBe(false); // no scope of the provider allows it
  });
});

describe("filterToolLists", () => {
  const list = (id: number) => ({ jsonrpc: "2.0", id, result: { tools: [{ name: "keep" }, { name: "drop" }], nextCursor: "c" } });
  const keep = (n: string) => n !== "drop";

  test("a JSON answer: only the answer to the tools/list request is filtered", async () => {
    const res = new Response(JSON.stringify([list(1), list(2)]), { headers: { "content-type": "application/json" } });
    const out = await filterToolLists(res, new Set(["1"]), keep, { "content-type": "application/json", "content-length": "999" });
    expect(out.headers.get("content-length")).toBeNull();
    const [a, b] = (await out.json()) as { result: { tools: { name: string }[]; nextCursor: string } }[];
    expect(a!.result).toEqual({ tools: [{ name: "keep" }], nextCursor: "c" });
    expect(b!.result.tools.length).toBe(2);
  });

  test("an event stream split anywhere: the matching event rewritten, every other byte passed", async () => {
    const text = `event: message\nid: e1\ndata: ${JSON.stringify({ jsonrpc: "2.0", method: "notifications/message", params: { drop: 1 } })}\n\nid: e2\ndata: ${JSON.stringify(list(7))}\n\n`;
    const bytes = new TextEncoder().encode(text);
    const body = new ReadableStream<Uint8Array>({
      start(c) {
        for (let i = 0; i < bytes.length; i += 7) c.enqueue(bytes.slice(i, i + 7));
        c.close();
      },
    });
    const out = await filterToolLists(new Response(body, { headers: { "content-type": "text/event-stream" } }), new Set(["7"]), keep, { "content-type": "text/event-stream" });
    const events = (await out.text()).split("\n\n");
    expect(events[0]).toBe(text.split("\n\n")[0]!);
    expect(events[1]).toBe(`id: e2\ndata: ${JSON.stringify({ ...list(7), result: { tools: [{ name: "keep" }], nextCursor: "c" } })}`);
  });
});
