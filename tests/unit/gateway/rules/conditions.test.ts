/**
 * CEL `when` conditions (DESIGN §16) as rules/conditions.ts compiles and evaluates them: what is refused at
 * configuration (syntax, unknown variables, a non-bool result, a field the variables do not have — with the closest
 * one named —, a `matches` pattern that is not RE2), what the variables hold, `matches` with RE2's semantics in linear
 * time, and the bounds on an evaluation's work over caller-shaped data (issue 35, finding 5), each of which fails the
 * evaluation — which the policy counts as holding for deny/approve (fail closed).
 */
import { describe, expect, test } from "bun:test";
import { compileCondition, policyProblems, requireConditions, type ConditionInput, type McpConditionInput } from "../../../../src/gateway/rules/conditions.ts";
import { MAX_READS } from "../../../../src/gateway/rules/condition-meter.ts";
import { AthError } from "../../../../src/protocol/index.ts";

function input(request: Partial<ConditionInput["request"]> = {}): ConditionInput {
  return {
    request: { method: "POST", path: "/v1/messages", segments: ["v1", "messages"], query: {}, headers: {}, body: null, body_size: 0n, ...request },
    agent: { id: "did:key:zAgent", client_id: "ath_client" },
    user: { id: "u1" },
    provider: { id: "mail" },
    token: { scopes: ["mail:read", "mail:send"] },
    now: new Date("2026-01-01T00:00:00Z"),
  };
}
const mcp = (args: unknown, tool = "send"): McpConditionInput => ({
  mcp: { method: "tools/call", tool, arguments: args },
  agent: { id: "mcp:client", client_id: "mcp_c" },
  user: { id: "u1" },
  provider: { id: "mail" },
  token: { scopes: [] },
  now: new Date(),
});
const evaluate = (when: string, i: ConditionInput | McpConditionInput = input(), kind: "http" | "mcp" = "http") => compileCondition(when, kind).evaluate(i);
const compileError = (when: string, kind: "http" | "mcp" | "both" = "http") => {
  try {
    compileCondition(when, kind);
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error(`compiled: ${when}`);
};

describe("compiled at configuration", () => {
  test("a syntax error, an unknown variable or a non-bool result is refused", () => {
    expect(compileError("request.body.to ==")).toMatch(/Unexpected|Expected/);
    expect(compileError("nobody.id == 1")).toContain("nobody");
    expect(compileError("1 + 2")).toBe("the expression gives int, not a bool");
    expect(compileError('mcp.tool == "x"', "http")).toContain("mcp");
  });

  test("a field the variable does not have is refused, naming it and the closest field (did you mean)", () => {
    expect(compileError('request.qeury.mode[0] == "x"')).toBe(
      'request.qeury: request has no field "qeury" (did you mean "query"?); its fields: method, path, segments, query, headers, body, body_size',
    );
    expect(compileError('request["qeury"] == {}')).toContain('request has no field "qeury" (did you mean "query"?)');
    expect(compileError("has(request.bdy)")).toContain('(did you mean "body"?)');
    expect(compileError('agent.name == "x"')).toBe('agent.name: agent has no field "name"; its fields: id, client_id');
    expect(compileError('"a" in token.scope')).toContain('(did you mean "scopes"?)');
    expect(compileError('mcp.tol == "send"', "mcp")).toContain('mcp has no field "tol" (did you mean "tool"?)');
    expect(compileError('mcp.tol == "send" || request.method == "GET"', "both")).toContain('mcp has no field "tol"');
  });

  test("fields below the variables' own are the caller's data: any name is allowed there", () => {
    for (const when of ["has(request.body.anything.at.all)", 'request.query.qeury[0] == "x"', 'request.headers["x-anything"] == "y"', "has(mcp.arguments.whatever)"]) {
      expect(() => compileCondition(when, when.startsWith("has(mcp") ? "mcp" : "http")).not.toThrow();
    }
  });

  test("a variable bound by a comprehension or cel.bind shadows the request's name inside it", () => {
    expect(evaluate('[{"qeury": 1}].exists(request, request.qeury == 1)')).toBe(true);
    expect(evaluate("cel.bind(request, {'qeury': 2}, request.qeury == 2)")).toBe(true);
    // …and only inside it
    expect(compileError("[1].exists(x, x == 1) && request.qeury == 1")).toContain("request.qeury");
  });

  test("a `matches` pattern that is not RE2 is refused, naming the pattern and why", () => {
    expect(compileError('request.path.matches("(a")')).toBe('matches("(a"): not an RE2 pattern: missing closing ) (at offset 0)');
    expect(compileError('request.path.matches("(?=x)y")')).toContain("lookaround is not supported");
    expect(compileError('request.path.matches("(a)\\\\1")')).toContain("backreferences are not supported");
    expect(compileError('request.path.matches("a**")')).toContain("bad repetition operator: **");
    expect(compileError('request.path.matches("a{1001}")')).toContain("bad repetition operator");
  });

  test("policyProblems names every rule that does not compile; requireConditions answers the admin API's 400", () => {
    const rules = [
      { match: ["GET /x"], when: 'request.method == "GET"' },
      { match: ["GET /x"], when: 'request.qeury.mode == "x"' },
      { match: ["MCP tools/call send"], when: 'mcp.tol == "x"' },
    ].map((r) => ({ ...r, action: "deny" as const, approver: "user" as const, ttl: 300 }));
    const problems = policyProblems(rules, "providers.mail.policy");
    expect(problems).toEqual([
      expect.stringMatching(/^providers\.mail\.policy\.1\.when: request\.qeury: request has no field "qeury" \(did you mean "query"\?\)/),
      expect.stringMatching(/^providers\.mail\.policy\.2\.when: mcp\.tol: mcp has no field "tol" \(did you mean "tool"\?\)/),
    ]);
    try {
      requireConditions(rules, "policy");
      throw new Error("accepted");
    } catch (err) {
      expect(err).toBeInstanceOf(AthError);
      expect((err as AthError).status).toBe(400);
      expect((err as AthError).details).toMatchObject({ field: "policy.1.when" });
      expect((err as AthError).message).toContain('did you mean "query"?');
    }
  });
});

describe("what the variables hold", () => {
  test("request, agent, user, provider, token and now; an MCP rule's mcp", () => {
    const i = input({ query: { folder: ["inbox", "secret"] }, headers: { "x-mode": "danger" }, body: { to: "a@evil.example", amount: 5000 }, body_size: 40n });
    expect(evaluate('"secret" in request.query.folder && request.headers["x-mode"] == "danger"', i)).toBe(true);
    expect(evaluate('request.body.to.endsWith("@evil.example") && request.body.amount > 1000.0 && request.body_size == 40', i)).toBe(true);
    expect(evaluate('request.segments[1] == "messages" && agent.id.startsWith("did:key:") && user.id == "u1" && provider.id == "mail"', i)).toBe(true);
    expect(evaluate('"mail:send" in token.scopes && now < timestamp("2027-01-01T00:00:00Z")', i)).toBe(true);
    expect(evaluate('mcp.tool == "send" && mcp.arguments.to == "x"', mcp({ to: "x" }), "mcp")).toBe(true);
  });

  test("a missing field is an evaluation error, not false (the policy fails it closed)", () => {
    expect(() => evaluate("request.body.amount > 1000.0", input({ body: {} }))).toThrow();
    expect(evaluate("has(request.body.amount) && request.body.amount > 1000.0", input({ body: {} }))).toBe(false);
  });
});

describe("matches: RE2, in time linear in the text (issue 35, finding 5)", () => {
  const m = (pattern: string, text: string) => evaluate(`request.body.s.matches(${JSON.stringify(pattern)})`, input({ body: { s: text } }));

  test("RE2's semantics: a match anywhere; ^ $ at the text's ends unless (?m); \\d \\w \\s ASCII; (?i) (?s)", () => {
    expect(m("ell", "hello")).toBe(true);
    expect(m("^ell", "hello")).toBe(false);
    expect(m("lo$", "hello\n")).toBe(false); // RE2's $ without (?m) is the end of the text
    expect(m("(?m)lo$", "hello\nworld")).toBe(true);
    expect(m("(?i)HELLO", "hello")).toBe(true);
    expect(m("a.c", "a\nc")).toBe(false);
    expect(m("(?s)a.c", "a\nc")).toBe(true);
    expect(m("^\\d+$", "١٢٣")).toBe(false); // Arabic-Indic digits: \d is ASCII in RE2
    expect(m("^\\pN+$", "١٢٣")).toBe(true);
    expect(m("\\bcat\\b", "a cat sat")).toBe(true);
    expect(m("\\bcat\\b", "concatenate")).toBe(false);
    expect(m("^x{2,3}$", "xxxx")).toBe(false);
    expect(m("^[[:alpha:]]+@evil\\.example$", "mallory@evil.example")).toBe(true);
    expect(m("\\Qa.b\\E", "axb")).toBe(false);
    expect(evaluate('request.path.matches("^/v1/")')).toBe(true);
  });

  test("the issue's pattern against 26 a's and a ! — and 40 — is decided at once (JavaScript's RegExp backtracks for seconds, then hours)", () => {
    const started = performance.now();
    expect(m("^(a+)+$", `${"a".repeat(26)}!`)).toBe(false);
    expect(m("^(a+)+$", `${"a".repeat(40)}!`)).toBe(false);
    expect(m("^(a|a)*$", `${"a".repeat(40)}!`)).toBe(false);
    expect(m("^(a+)+$", "a".repeat(40))).toBe(true);
    expect(performance.now() - started).toBeLessThan(1000); // a bound, not a speed: backtracking takes > 2^40 steps
  });

  test("a pattern computed at run time is RE2 too: one that does not parse fails the evaluation", () => {
    expect(evaluate("request.body.s.matches(request.body.p)", input({ body: { s: "abc", p: "^a" } }))).toBe(true);
    expect(() => evaluate("request.body.s.matches(request.body.p)", input({ body: { s: "abc", p: "(?=a)" } }))).toThrow(/lookaround/);
  });

  test("a text × pattern needing more than the budget fails the evaluation instead of holding the process", () => {
    let text = "";
    let seed = 1;
    for (let i = 0; i < 1 << 20; i++) {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      text += seed & 0x10000 ? "a" : "b";
    }
    expect(() => m("(a|b)*a(a|b){20}c", text)).toThrow(/matching needs more than/);
  });
});

describe("bounded work over caller-shaped data (issue 35, finding 5)", () => {
  const wide = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, i]));

  test("an object of 60,000 keys costs a condition that does not walk it next to nothing", () => {
    const body = { ...wide(60_000), to: "x@evil.example" };
    expect(evaluate('has(request.body.to) && request.body.to.endsWith("@evil.example")', input({ body }))).toBe(true);
    expect(evaluate("has(request.body.k59999)", input({ body }))).toBe(true);
    expect(evaluate("size(request.body) > 1", input({ body }))).toBe(true);
    const q = Object.fromEntries(Array.from({ length: 20_000 }, (_, i) => [`q${i}`, ["1"]]));
    expect(evaluate('"q7" in request.query', input({ query: q }))).toBe(true);
  });

  test("a condition reading large data again for each member (quadratic) fails once it passes MAX_READS reads", () => {
    const items = Array.from({ length: 20_000 }, (_, i) => `s${i}`);
    const started = performance.now();
    expect(() => evaluate("request.body.items.all(x, x in request.body.items)", input({ body: { items } }))).toThrow(`more than ${MAX_READS} times`);
    expect(() => evaluate("request.body.o.all(a, request.body.o.exists(b, b == a))", input({ body: { o: wide(5_000) } }))).toThrow(/more than/);
    expect(() => evaluate("mcp.arguments.l.all(x, x in mcp.arguments.l)", mcp({ l: items }), "mcp")).toThrow(/more than/);
    expect(performance.now() - started).toBeLessThan(5000); // a bound: unbounded, these take minutes
    // the same quadratic shape over a small collection is fine
    expect(evaluate("request.body.items.all(x, x in request.body.items)", input({ body: { items: items.slice(0, 50) } }))).toBe(true);
  });

  test("each evaluation gets its own budget: the same large body passes rule after rule", () => {
    const items = Array.from({ length: 20_000 }, (_, i) => i);
    const i = input({ body: { items } });
    for (let r = 0; r < 20; r++) expect(evaluate("request.body.items.exists(x, x == 19999.0)", i)).toBe(true);
  });
});
