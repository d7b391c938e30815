/** The gateway's protocol rules as pure functions: scopes, scope_rules, redirect URIs, approval policy, proxy URLs. */
import { describe, expect, test } from "bun:test";
import { AthError, ProviderConfig } from "../../../../src/protocol/index.ts";
import { decideApprovals } from "../../../../src/gateway/rules/policy.ts";
import { relativePath, upstreamUrl } from "../../../../src/gateway/proxy/url.ts";
import { matchRedirectUri } from "../../../../src/gateway/rules/redirect-uri.ts";
import { intersectScopes, parseScopeString, unapprovedScopes } from "../../../../src/gateway/rules/scopes.ts";
import { allowedByScopeRules } from "../../../../src/gateway/proxy/scope-rules.ts";
import { s256 } from "../../../../src/gateway/oauth/pkce.ts";
import { constantTimeEqual } from "../../../../src/gateway/crypto/secrets.ts";

describe("spec §1.8 — effective scopes", () => {
  test("effective = approved ∩ consented ∩ requested, in request order, without duplicates", () => {
    expect(intersectScopes(["a", "b", "c"], ["c", "b", "x"], ["c", "a", "b", "c"])).toEqual(["c", "b"]);
    expect(intersectScopes(["a"], ["b"], ["a", "b"])).toEqual([]);
    expect(intersectScopes([], ["a"], ["a"])).toEqual([]);
  });
  test("unapproved scopes are listed once each", () => {
    expect(unapprovedScopes(["a"], ["a", "b", "b", "c"])).toEqual(["b", "c"]);
  });
  test("an OAuth scope string is split on spaces (RFC 6749 §3.3)", () => {
    expect(parseScopeString("openid  mail:read ")).toEqual(["openid", "mail:read"]);
    expect(parseScopeString(undefined)).toEqual([]);
  });
});

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

describe("Phase B — user_redirect_uri (schema: exact match; RFC 8252 §7.3 loopback)", () => {
  test("no redirect URI given is always fine", () => {
    expect(matchRedirectUri(null, undefined)).toBe(true);
  });
  test("an agent that registered none may not send one", () => {
    expect(matchRedirectUri(null, "https://agent.example/cb")).toBe(false);
    expect(matchRedirectUri([], "https://agent.example/cb")).toBe(false);
  });
  test("https URIs match exactly, nothing else", () => {
    const reg = ["https://agent.example/cb"];
    expect(matchRedirectUri(reg, "https://agent.example/cb")).toBe(true);
    for (const bad of ["https://agent.example/cb/", "https://agent.example/cb?x=1", "https://agent.example:444/cb", "https://agent.example/CB", "http://agent.example/cb"]) {
      expect(matchRedirectUri(reg, bad)).toBe(false);
    }
  });
  test("loopback IP URIs match on any port, same path", () => {
    const reg = ["http://127.0.0.1/callback", "http://[::1]/callback"];
    expect(matchRedirectUri(reg, "http://127.0.0.1:53121/callback")).toBe(true);
    expect(matchRedirectUri(reg, "http://[::1]:8080/callback")).toBe(true);
    expect(matchRedirectUri(reg, "http://127.0.0.1:53121/other")).toBe(false);
    expect(matchRedirectUri(reg, "http://localhost:53121/callback")).toBe(false);
    expect(matchRedirectUri(reg, "https://127.0.0.1:53121/callback")).toBe(false);
    expect(matchRedirectUri(reg, "http://user:pw@127.0.0.1:5/callback")).toBe(false);
    expect(matchRedirectUri(["https://agent.example/cb"], "http://127.0.0.1:5/cb")).toBe(false);
  });
});

describe("Phase A — approval policy (DESIGN §3, §8)", () => {
  const provider = (over: Record<string, unknown> = {}) =>
    ProviderConfig.parse({
      display_name: "Mail",
      available_scopes: ["mail:read", "mail:send"],
      authorize_endpoint: "https://p.example/authorize",
      token_endpoint: "https://p.example/token",
      client_id: "c",
      client_secret: "s",
      ...over,
    });
  test("requested ∩ available is approved, the rest denied with a reason", () => {
    const r = decideApprovals([{ provider_id: "mail", scopes: ["mail:read", "mail:delete"] }], new Map([["mail", provider()]]), "auto");
    expect(r.status).toBe("approved");
    expect(r.approvals).toEqual([
      { provider_id: "mail", approved_scopes: ["mail:read"], denied_scopes: ["mail:delete"], denial_reason: "Not offered by mail: mail:delete" },
    ]);
  });
  test("an unknown provider is denied entirely; nothing approved → denied", () => {
    const r = decideApprovals([{ provider_id: "nope", scopes: ["x"] }], new Map([["mail", provider()]]), "auto");
    expect(r.status).toBe("denied");
    expect(r.approvals[0]).toEqual({ provider_id: "nope", approved_scopes: [], denied_scopes: ["x"], denial_reason: "Unknown provider 'nope'" });
  });
  test("manual mode (global or per provider) leaves the agent pending; review_scopes are held", () => {
    expect(decideApprovals([{ provider_id: "mail", scopes: ["mail:read"] }], new Map([["mail", provider()]]), "manual").status).toBe("pending");
    expect(decideApprovals([{ provider_id: "mail", scopes: ["mail:read"] }], new Map([["mail", provider({ approval: "manual" })]]), "auto").status).toBe("pending");
    const r = decideApprovals([{ provider_id: "mail", scopes: ["mail:read", "mail:send"] }], new Map([["mail", provider({ review_scopes: ["mail:send"] })]]), "auto");
    expect(r.approvals[0]?.approved_scopes).toEqual(["mail:read"]);
    expect(r.approvals[0]?.denial_reason).toContain("Requires review");
  });
  test("duplicate provider entries are merged", () => {
    const r = decideApprovals(
      [{ provider_id: "mail", scopes: ["mail:read"] }, { provider_id: "mail", scopes: ["mail:send", "mail:read"] }],
      new Map([["mail", provider()]]),
      "auto",
    );
    expect(r.approvals).toHaveLength(1);
    expect(r.approvals[0]?.approved_scopes).toEqual(["mail:read", "mail:send"]);
  });
});

describe("proxy — upstream URL composition", () => {
  test("api_base_url + / + path + query, keeping the base path prefix and the original encoding", () => {
    expect(upstreamUrl("https://api.example.com", "v1/messages", "?q=1&x=%20").href).toBe("https://api.example.com/v1/messages?q=1&x=%20");
    expect(upstreamUrl("https://api.example.com/v1/", "messages/a%20b", "").href).toBe("https://api.example.com/v1/messages/a%20b");
    expect(upstreamUrl("https://api.example.com/v1", "", "").href).toBe("https://api.example.com/v1/");
    expect(upstreamUrl("https://api.example.com/v1", "notes/", "").href).toBe("https://api.example.com/v1/notes/");
  });
  test("traversal and origin escapes are refused with 400 INVALID_REQUEST naming the path", () => {
    for (const bad of ["..", "a/../../b", "%2e%2e/x", "%2E%2e/x", ".%2e/x", "./x", "a/%2f/b", "a%2fb", "a%5cb", "a\\b", "/evil.example/x", "a//b", "%00", "%zz"]) {
      let err: unknown;
      try {
        upstreamUrl("https://api.example.com/v1", bad, "");
      } catch (e) {
        err = e;
      }
      expect(err, bad).toBeInstanceOf(AthError);
      expect((err as AthError).code).toBe("INVALID_REQUEST");
      expect((err as AthError).details).toEqual({ field: "path" });
    }
  });
  test("the path for scope_rules is decoded and rooted", () => {
    expect(relativePath("v1/a%20b")).toBe("/v1/a b");
  });
});

describe("PKCE and secrets", () => {
  test("S256 matches RFC 7636 Appendix B", () => {
    expect(s256("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk")).toBe("E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM");
  });
  test("constant-time comparison is still a comparison", () => {
    expect(constantTimeEqual("ath_secret_a", "ath_secret_a")).toBe(true);
    expect(constantTimeEqual("ath_secret_a", "ath_secret_b")).toBe(false);
    expect(constantTimeEqual("a", "aa")).toBe(false);
    expect(constantTimeEqual("", "")).toBe(true);
  });
});
