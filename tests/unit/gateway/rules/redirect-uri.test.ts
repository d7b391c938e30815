/** user_redirect_uri matching (schema: exact match; RFC 8252 §7.3 loopback on any port). */
import { describe, expect, test } from "bun:test";
import { matchRedirectUri } from "../../../../src/gateway/rules/redirect-uri.ts";

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
  test("userinfo, fragment, backslash, subdomain, mapped-IPv6, query and case tricks never match a registered URI", () => {
    const reg = ["http://127.0.0.1/callback", "https://agent.example/cb"];
    for (const given of [
      "http://127.0.0.1:5@evil.example/callback",
      "http://evil.example/callback#@127.0.0.1",
      "http://evil.example\\@127.0.0.1/callback",
      "http://127.0.0.1.evil.example/callback",
      "http://[::ffff:127.0.0.1]:5/callback",
      "http://127.0.0.1:5/callback#frag",
      "http://127.0.0.1:5/callback?code=injected",
      "http://127.0.0.1:5/Callback",
      "http://127.0.0.1:5/callback/",
      "https://agent.example./cb",
      "https://AGENT.example/cb",
      "https://agent.example/cb#x",
      "https://agent.example@evil.example/cb",
      "https://evil.example/https://agent.example/cb",
    ]) {
      expect({ given, match: matchRedirectUri(reg, given) }).toEqual({ given, match: false });
    }
  });
});
