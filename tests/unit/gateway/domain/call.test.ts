/**
 * The one call decision (src/gateway/domain/call.ts, DESIGN §16 and §18): the same order — scope_rules, approval_rules,
 * policy, budgets — for an HTTP request and an MCP call; MCP's own matching (`MCP <method> <name>`); one body model for
 * what a condition reads; and what `tools/list` may show.
 */
import { describe, expect, test } from "bun:test";
import type { Gateway } from "../../../../src/gateway/context.ts";
import { decideCall, listable, type Caller, type Decision, type HttpSubject } from "../../../../src/gateway/domain/call.ts";
import { canonicalRequest } from "../../../../src/gateway/rules/canonical-request.ts";
import { callOf, matchKey, mcpRuleMatches } from "../../../../src/gateway/rules/mcp-call.ts";
import { allowedByScopeRules } from "../../../../src/gateway/rules/scope-rules.ts";
import { policyProblems } from "../../../../src/gateway/rules/conditions.ts";
import { AthError, ProviderConfig, type ProviderConfigInput } from "../../../../src/protocol/index.ts";
import type { AgentRecord, TokenRecord } from "../../../../src/store/types.ts";

const base: ProviderConfigInput = {
  display_name: "Mail", available_scopes: ["read", "send"], authorize_endpoint: "https://p.example/a", token_endpoint: "https://p.example/t",
  client_id: "c", client_secret: "s", api_base_url: "https://api.example", mcp: { url: "https://mcp.example/mcp" },
};
const config = (over: Partial<ProviderConfigInput> = {}) => ProviderConfig.parse({ ...base, ...over });
const token = (scopes: string[], over: Partial<TokenRecord> = {}) => ({ scopes, agent_id: "ag", client_id: "cl", user_id: "alice", provider_id: "mail", ...over }) as TokenRecord;
const noAgent = {} as AgentRecord;
const gw = (strictScopes = false) => ({ opts: { strictScopes, maxProxyBody: 1 << 20 }, now: () => Date.parse("2026-11-28T12:00:00Z") }) as unknown as Gateway;
const caller = (c: ReturnType<typeof config>, t: TokenRecord, agent: AgentRecord = noAgent): Caller => ({ config: c, agent, token: t });
const mcpCall = (method: string, params?: Record<string, unknown>) => {
  const bytes = params && "arguments" in params ? new TextEncoder().encode(JSON.stringify(params.arguments)) : new Uint8Array(0);
  return { kind: "mcp" as const, call: callOf(method, params), argumentBytes: bytes };
};
const SEND: Decision = { kind: "send", approval: null, budgets: [] };

describe("MCP calls: match keys and rules", () => {
  test("the name is the tool, the prompt or the resource URI", () => {
    expect(matchKey(callOf("tools/call", { name: "send_email", arguments: { to: "x" } }))).toBe("MCP tools/call send_email");
    expect(matchKey(callOf("prompts/get", { name: "summary" }))).toBe("MCP prompts/get summary");
    expect(matchKey(callOf("resources/read", { uri: "file:///a/b" }))).toBe("MCP resources/read file:///a/b");
    expect(matchKey(callOf("tools/list", undefined))).toBe("MCP tools/list");
    expect(callOf("tools/call", { name: 42 }).name).toBeNull();
  });

  test("`*` is one segment, `**` any; no name matches every call of the method; HTTP rules never match", () => {
    const send = callOf("tools/call", { name: "send_email" });
    expect(mcpRuleMatches("MCP tools/call send_email", send)).toBe(true);
    expect(mcpRuleMatches("MCP tools/call *", send)).toBe(true);
    expect(mcpRuleMatches("MCP tools/call", send)).toBe(true);
    expect(mcpRuleMatches("MCP tools/call read_mail", send)).toBe(false);
    expect(mcpRuleMatches("MCP prompts/get *", send)).toBe(false);
    expect(mcpRuleMatches("POST /tools/call/send_email", send)).toBe(false);
    const read = callOf("resources/read", { uri: "repo://octo/hello/README.md" });
    expect(mcpRuleMatches("MCP resources/read **", read)).toBe(true);
    expect(mcpRuleMatches("MCP resources/read repo:/*", read)).toBe(false);
  });

  test("provider config takes MCP rules and refuses malformed ones, naming the grammar", () => {
    expect(() => config({ scope_rules: { read: ["MCP tools/call *", "MCP resources/read **", "GET /v1/**"] } })).not.toThrow();
    expect(() => config({ scope_rules: { read: ["MCP Tools/Call x"] } })).toThrow(/MCP <method> <name>/);
    expect(() => config({ approval_rules: [{ match: ["MCP tools/call send_email"] }] })).not.toThrow();
  });
});

describe("decideCall — scope first", () => {
  const rules = { scope_rules: { read: ["MCP tools/call read_mail"], send: ["MCP tools/call send_email"] } };

  test("initialize, ping, notifications and tools/list need no scope", async () => {
    for (const method of ["initialize", "ping", "notifications/initialized", "notifications/cancelled", "tools/list"]) {
      expect(await decideCall(gw(true), caller(config(rules), token([])), mcpCall(method))).toEqual(SEND);
    }
  });

  test("a call the token lacks scope for names the scopes that would allow it", async () => {
    expect(await decideCall(gw(), caller(config(rules), token(["read"])), mcpCall("tools/call", { name: "read_mail" }))).toEqual(SEND);
    expect(await decideCall(gw(), caller(config(rules), token(["read"])), mcpCall("tools/call", { name: "send_email" }))).toMatchObject({ kind: "scope", needed: ["send"] });
  });

  test("a call no scope allows needs nothing a token could get; without MCP rules everything is allowed, unless --strict-scopes", async () => {
    expect(await decideCall(gw(), caller(config(rules), token(["read", "send"])), mcpCall("tools/call", { name: "drop_all" }))).toMatchObject({ kind: "scope", needed: [] });
    expect(await decideCall(gw(), caller(config(), token(["read"])), mcpCall("tools/call", { name: "drop_all" }))).toEqual(SEND);
    expect(await decideCall(gw(true), caller(config(), token(["read"])), mcpCall("tools/call", { name: "drop_all" }))).toMatchObject({ kind: "scope", needed: [] });
    // HTTP-only rules (a REST template) do not judge MCP calls
    expect(await decideCall(gw(), caller(config({ scope_rules: { read: ["GET /v1/**"] } }), token(["read"])), mcpCall("tools/call", { name: "x" }))).toEqual(SEND);
  });

  test("an HTTP request: scope_rules of the token's scopes, or SCOPE_NOT_APPROVED naming the scopes that would allow it", async () => {
    const c = config({ scope_rules: { read: ["GET /v1/messages/**"], send: ["POST /v1/messages/send"] } });
    const http = (method: string, path: string): HttpSubject => {
      const canonical = canonicalRequest(method, path, "");
      return { kind: "http", canonical, allows: (s) => allowedByScopeRules(c.scope_rules!, s, canonical), headers: {}, body: emptyBody() };
    };
    expect(await decideCall(gw(), caller(c, token(["read"])), http("GET", "v1/messages/1"))).toEqual(SEND);
    expect(await decideCall(gw(), caller(c, token(["read"])), http("POST", "v1/messages/send"))).toMatchObject({ kind: "scope", needed: ["send"], message: expect.stringContaining("needs the scope send") });
  });
});

describe("decideCall — approval rules, then policy", () => {
  const rules = { scope_rules: { read: ["MCP tools/call read_mail"], send: ["MCP tools/call send_email"] } };
  const policy = (list: unknown[]) => config({ policy: list as ProviderConfigInput["policy"] });
  const send = (args: unknown) => mcpCall("tools/call", { name: "send_email", arguments: args });

  test("approval rules, the provider's then the agent's, after scope", async () => {
    const c = config({ ...rules, approval_rules: [{ match: ["MCP tools/call send_email"], approver: "admin" }] });
    expect(await decideCall(gw(), caller(c, token(["send"])), mcpCall("tools/call", { name: "send_email" }))).toMatchObject({ kind: "send", approval: { approver: "admin", ttl: 300 } });
    const agent = { approval_rules: [{ match: ["MCP tools/call read_mail"], approver: "user" as const, ttl: 60 }] } as AgentRecord;
    expect(await decideCall(gw(), caller(c, token(["read"]), agent), mcpCall("tools/call", { name: "read_mail" }))).toMatchObject({ kind: "send", approval: { ttl: 60 } });
    // scope first: a call the token cannot make is a step-up, not an approval
    expect(await decideCall(gw(), caller(c, token(["read"])), mcpCall("tools/call", { name: "send_email" }))).toMatchObject({ kind: "scope" });
  });

  test("CEL over mcp.arguments decides: deny with the rule's reason, approve, allow; the first that holds wins", async () => {
    const c = policy([
      { match: ["MCP tools/call send_email"], when: 'mcp.arguments.to.endsWith("@rival.example")', action: "deny", reason: "not to rivals" },
      { match: ["MCP tools/call *"], when: 'mcp.tool == "send_email" && size(mcp.arguments.to) > 20', action: "approve", approver: "admin" },
    ]);
    expect(await decideCall(gw(), caller(c, token([])), send({ to: "a@rival.example" }))).toMatchObject({ kind: "deny", hit: { rule: { reason: "not to rivals" }, from: "provider", index: 0 } });
    expect(await decideCall(gw(), caller(c, token([])), send({ to: "someone-long@friends.example" }))).toMatchObject({ kind: "send", approval: { approver: "admin" } });
    expect(await decideCall(gw(), caller(c, token([])), send({ to: "a@friends.example" }))).toEqual(SEND);
    // both hold (a rival's address longer than 20 characters): the first rule decides
    expect(await decideCall(gw(), caller(c, token([])), send({ to: "someone-long@rival.example" }))).toMatchObject({ kind: "deny", hit: { rule: { reason: "not to rivals" } } });
    // HTTP rules never judge an MCP call
    expect(await decideCall(gw(), caller(policy([{ match: ["POST /send"], action: "deny" }]), token([])), send({}))).toEqual(SEND);
  });

  test("an evaluation error fails closed: a deny or approve holds, an allow does not", async () => {
    const deny = policy([{ match: ["MCP tools/call send_email"], when: 'mcp.arguments.to.endsWith("x")', action: "deny" }]);
    expect(await decideCall(gw(), caller(deny, token([])), send({}))).toMatchObject({ kind: "deny", hit: { failed: expect.any(String) } });
    const allowFirst = policy([
      { match: ["MCP tools/call send_email"], when: 'mcp.arguments.to.endsWith("x")', action: "allow" },
      { match: ["MCP tools/call send_email"], action: "approve" },
    ]);
    expect(await decideCall(gw(), caller(allowFirst, token([])), send({}))).toMatchObject({ kind: "send", approval: { approver: "user" } });
  });

  test("arguments that are not an object cannot hide a field: a rule reading them holds as an evaluation error", async () => {
    const c = policy([{ match: ["MCP tools/call send_email"], when: 'has(mcp.arguments.to) && mcp.arguments.to == "boss"', action: "deny", reason: "not the boss" }]);
    for (const args of ['{"to":"boss"}', ["boss"], 42, true]) {
      expect(await decideCall(gw(), caller(c, token([])), send(args))).toMatchObject({ kind: "deny", hit: { failed: expect.stringContaining("not an object") } });
    }
    // no arguments at all, or null: nothing to hide, the rule does not hold
    expect(await decideCall(gw(), caller(c, token([])), mcpCall("tools/call", { name: "send_email" }))).toEqual(SEND);
    expect(await decideCall(gw(), caller(c, token([])), send(null))).toEqual(SEND);
  });

  test("the agent's rules follow the provider's; user, agent and token are there", async () => {
    const agent = { policy: [{ match: ["MCP tools/call *"], when: 'user.id == "alice" && "send" in token.scopes', action: "deny", reason: "alice sends nothing", approver: "user", ttl: 300 }] } as unknown as AgentRecord;
    expect(await decideCall(gw(), caller(config(), token(["send"]), agent), send({}))).toMatchObject({ kind: "deny", hit: { rule: { reason: "alice sends nothing" }, from: "agent" } });
    expect(await decideCall(gw(), caller(config(), token(["read"]), agent), send({}))).toEqual(SEND);
  });

  test("`mcp` compiles in MCP rules only, `request` in HTTP rules only; a rule mixing both may name either", () => {
    expect(policyProblems([{ match: ["MCP tools/call x"], when: 'mcp.tool == "x"', action: "deny", approver: "user", ttl: 300 }], "policy")).toEqual([]);
    expect(policyProblems([{ match: ["POST /x"], when: 'mcp.tool == "x"', action: "deny", approver: "user", ttl: 300 }], "policy")[0]).toMatch(/^policy\.0\.when: .*mcp/);
    expect(policyProblems([{ match: ["MCP tools/call x"], when: 'request.path == "/x"', action: "deny", approver: "user", ttl: 300 }], "policy")[0]).toMatch(/request/);
    expect(policyProblems([{ match: ["MCP tools/call x", "POST /x"], when: 'request.path == "/x" || mcp.tool == "x"', action: "deny", approver: "user", ttl: 300 }], "policy")).toEqual([]);
  });

  test("budgets that match are returned to be counted, for either door", async () => {
    const c = config({ budgets: [{ match: ["MCP tools/call send_email"], per: "agent", limit: 5, window: "1h" }] } as Partial<ProviderConfigInput>);
    const d = await decideCall(gw(), caller(c, token([])), send({}));
    expect(d).toMatchObject({ kind: "send", approval: null, budgets: [{ rule: { limit: 5 }, usage: { limit: 5, provider_id: "mail", client_id: "cl" } }] });
    expect(await decideCall(gw(), caller(c, token([])), mcpCall("tools/call", { name: "read_mail" }))).toEqual(SEND);
  });
});

describe("one body model: a rule reads the body as strict JSON, or cannot be evaluated", () => {
  const c = config({ policy: [{ match: ["POST /v1/pay"], when: "has(request.body.amount) && request.body.amount > 1000.0", action: "approve", approver: "user" }] as ProviderConfigInput["policy"] });
  const post = (body: string | Uint8Array, headers: Record<string, string>): HttpSubject => {
    const bytes = typeof body === "string" ? new TextEncoder().encode(body) : body;
    const canonical = canonicalRequest("POST", "v1/pay", "");
    return {
      kind: "http", canonical, allows: () => undefined, headers,
      body: { contentLength: String(bytes.byteLength), contentType: headers["content-type"] ?? null, contentEncoding: headers["content-encoding"] ?? null, read: async () => bytes, whole: () => bytes },
    };
  };
  const json = { "content-type": "application/json" };

  test("strict JSON is read: the rule holds or not by its fields", async () => {
    expect(await decideCall(gw(), caller(c, token([])), post('{"amount": 5000}', json))).toMatchObject({ kind: "send", approval: { approver: "user" } });
    expect(await decideCall(gw(), caller(c, token([])), post('{"amount": 5}', json))).toEqual(SEND);
    expect(await decideCall(gw(), caller(c, token([])), post("", json))).toEqual(SEND);
  });

  test("every body ath cannot read as the upstream would makes the rule hold (issue 35 finding 1)", async () => {
    const cases: [string, string | Uint8Array, Record<string, string>][] = [
      ["gzip", Bun.gzipSync(new TextEncoder().encode('{"amount": 5000}')), { ...json, "content-encoding": "gzip" }],
      ["deflate", '{"amount": 5000}', { ...json, "content-encoding": "deflate" }],
      ["br", '{"amount": 5000}', { ...json, "content-encoding": "br" }],
      ["a form", "amount=5000", { "content-type": "application/x-www-form-urlencoded" }],
      ["JSON in a form", '{"x":"&amount=5000&"}', { "content-type": "application/x-www-form-urlencoded" }],
      ["multipart", '--b\r\ncontent-disposition: form-data; name="amount"\r\n\r\n5000\r\n--b--', { "content-type": "multipart/form-data; boundary=b" }],
      ["no content type", '{"amount": 5000}', {}],
      ["trailing data", '{"amount": 5} {"amount": 5000}', json],
      ["NDJSON", '{"amount": 5}\n{"amount": 5000}\n', json],
      ["a comment", '{"amount": 5000 /* c */}', json],
      ["a trailing comma", '{"amount": 5000,}', json],
      ["single quotes", "{'amount': 5000}", json],
      ["UTF-16", new Uint8Array([0xff, 0xfe, ...[...new TextEncoder().encode('{"amount": 5000}')].flatMap((b) => [b, 0])]), json],
      ["an invalid UTF-8 byte", new Uint8Array([...new TextEncoder().encode('{"amount": 5000, "n": "'), 0xc3, 0x28, 0x22, 0x7d]), json],
      ["a duplicate key", '{"amount": 5, "amount": 5000}', json],
      ["a byte-order mark", "\ufeff{\"amount\": 5000}", json],
      ["a charset other than UTF-8", '{"amount": 5000}', { "content-type": "application/json; charset=utf-16" }],
    ];
    for (const [name, body, headers] of cases) {
      const d = await decideCall(gw(), caller(c, token([])), post(body, headers));
      expect({ name, kind: d.kind, approved: d.kind === "send" && d.approval !== null }).toEqual({ name, kind: "send", approved: true });
    }
  });

  test("an allow rule reading an unreadable body does not allow", async () => {
    const allow = config({ scope_rules: { read: ["POST /v1/pay"] }, policy: [{ match: ["POST /v1/pay"], when: "request.body.amount < 10.0", action: "allow" }, { match: ["POST /v1/pay"], action: "deny", reason: "big" }] as ProviderConfigInput["policy"] });
    expect(await decideCall(gw(), caller(allow, token(["read"])), { ...post("amount=1", { "content-type": "application/x-www-form-urlencoded" }), allows: () => true })).toMatchObject({ kind: "deny", hit: { rule: { reason: "big" } } });
  });

  test("a body over --max-policy-body is 413 before any rule is judged", async () => {
    const small = { ...gw(), opts: { strictScopes: false, maxPolicyBody: 4, maxProxyBody: 1 << 20 } } as unknown as Gateway;
    const s = post('{"amount": 5000}', json);
    s.body.read = async (limit, tooLarge) => {
      if (16 > limit) throw tooLarge();
      return new Uint8Array();
    };
    await expect(decideCall(small, caller(c, token([])), s)).rejects.toMatchObject({ code: "PAYLOAD_TOO_LARGE" } satisfies Partial<AthError>);
  });
});

describe("listable — what tools/list shows", () => {
  test("a tool is hidden only when every call of it is refused, whatever its arguments", () => {
    const c = config({
      scope_rules: { read: ["MCP tools/call read_mail", "MCP tools/call drop_all", "MCP tools/call maybe"], send: ["MCP tools/call send_email"] },
      policy: [
        { match: ["MCP tools/call drop_all"], action: "deny" },
        { match: ["MCP tools/call maybe"], when: 'user.id == "alice"', action: "deny" },
        { match: ["MCP tools/call send_email"], when: 'mcp.arguments.to == "x"', action: "deny" },
      ] as ProviderConfigInput["policy"],
    });
    const t = token(["read"]);
    expect(listable(gw(), caller(c, t), "drop_all")).toBe(false); // no `when`
    expect(listable(gw(), caller(c, t), "maybe")).toBe(false); // a `when` that does not read the arguments, holding
    expect(listable(gw(), caller(c, { ...t, user_id: "bob" }), "maybe")).toBe(true);
    expect(listable(gw(), caller(c, t), "send_email")).toBe(true); // the token lacks its scope (step-up), and the deny reads arguments
    expect(listable(gw(), caller(c, t), "read_mail")).toBe(true);
    expect(listable(gw(), caller(c, t), "unknown_tool")).toBe(false); // no scope of the provider allows it
  });
});

function emptyBody(): HttpSubject["body"] {
  const none = new Uint8Array(0);
  return { contentLength: null, contentType: null, contentEncoding: null, read: async () => none, whole: () => none };
}
