/** scope_rules: which method and path each scope of a token allows at the proxy. */
import { describe, expect, test } from "bun:test";
import { allowedByScopeRules } from "../../../../src/gateway/rules/scope-rules.ts";
import { canonicalRequest } from "../../../../src/gateway/rules/canonical-request.ts";

/** The canonical request of `method path` (path as sent, with its leading `/`). */
const req = (method: string, path: string) => canonicalRequest(method, path.slice(1), "");

describe("proxy — scope_rules", () => {
  const rules = { "mail:read": ["GET /v1/messages", "GET /v1/messages/**"], "mail:send": ["POST /v1/messages"], admin: ["* /admin/*"] };
  test("a request is allowed only by a rule of one of the token's scopes", () => {
    expect(allowedByScopeRules(rules, ["mail:read"], req("GET", "/v1/messages"))).toBe(true);
    expect(allowedByScopeRules(rules, ["mail:read"], req("GET", "/v1/messages/42/parts/1"))).toBe(true);
    expect(allowedByScopeRules(rules, ["mail:read"], req("POST", "/v1/messages"))).toBe(false);
    expect(allowedByScopeRules(rules, ["mail:send"], req("POST", "/v1/messages"))).toBe(true);
    expect(allowedByScopeRules(rules, ["mail:send"], req("post", "/v1/messages"))).toBe(true);
    expect(allowedByScopeRules(rules, [], req("GET", "/v1/messages"))).toBe(false);
  });
  test("* matches one segment and any method; ** any rest", () => {
    expect(allowedByScopeRules(rules, ["admin"], req("DELETE", "/admin/x"))).toBe(true);
    expect(allowedByScopeRules(rules, ["admin"], req("GET", "/admin/x/y"))).toBe(false);
    expect(allowedByScopeRules(rules, ["admin"], req("GET", "/admin"))).toBe(false);
    expect(allowedByScopeRules({ s: ["GET /a/**/z"] }, ["s"], req("GET", "/a/b/c/z"))).toBe(true);
    expect(allowedByScopeRules({ s: ["GET /a/**/z"] }, ["s"], req("GET", "/a/z"))).toBe(true);
    expect(allowedByScopeRules({ s: ["GET /a/**/z"] }, ["s"], req("GET", "/a/b/c"))).toBe(false);
  });
});
