/** scope_rules: which method and path each scope of a token allows at the proxy. */
import { describe, expect, test } from "bun:test";
import { allowedByScopeRules } from "../../../../src/gateway/proxy/scope-rules.ts";

describe("proxy — scope_rules", () => {
  const rules = { "mail:read": ["GET /v1/messages", "GET /v1/messages/**"], "mail:send": ["POST /v1/messages"], admin: ["* /admin/*"] };
  test("a request is allowed only by a rule of one of the token's scopes", () => {
    expect(allowedByScopeRules(rules, ["mail:read"], "GET", "/v1/messages")).toBe(true);
    expect(allowedByScopeRules(rules, ["mail:read"], "GET", "/v1/messages/42/parts/1")).toBe(true);
    expect(allowedByScopeRules(rules, ["mail:read"], "POST", "/v1/messages")).toBe(false);
    expect(allowedByScopeRules(rules, ["mail:send"], "POST", "/v1/messages")).toBe(true);
    expect(allowedByScopeRules(rules, ["mail:send"], "post", "/v1/messages")).toBe(true);
    expect(allowedByScopeRules(rules, [], "GET", "/v1/messages")).toBe(false);
  });
  test("* matches one segment and any method; ** any rest", () => {
    expect(allowedByScopeRules(rules, ["admin"], "DELETE", "/admin/x")).toBe(true);
    expect(allowedByScopeRules(rules, ["admin"], "GET", "/admin/x/y")).toBe(false);
    expect(allowedByScopeRules(rules, ["admin"], "GET", "/admin")).toBe(false);
    expect(allowedByScopeRules({ s: ["GET /a/**/z"] }, ["s"], "GET", "/a/b/c/z")).toBe(true);
    expect(allowedByScopeRules({ s: ["GET /a/**/z"] }, ["s"], "GET", "/a/z")).toBe(true);
    expect(allowedByScopeRules({ s: ["GET /a/**/z"] }, ["s"], "GET", "/a/b/c")).toBe(false);
  });
});
