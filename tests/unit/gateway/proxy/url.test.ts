/** Proxy URL composition: api_base_url + the agent's path, never leaving the base URL's origin or prefix. */
import { describe, expect, test } from "bun:test";
import { AthError } from "../../../../src/protocol/index.ts";
import { upstreamUrl } from "../../../../src/gateway/proxy/url.ts";

describe("proxy — upstream URL composition", () => {
  test("the upstream URL is api_base_url + / + path + query, keeping the base path prefix and the original encoding", () => {
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
  test("segments an upstream may normalise into dot segments (..;  .;  %252e%252e) are refused", () => {
    for (const raw of ["v1/messages/..;/admin", "v1/messages/.;/x", "v1/messages/%2e%2e;jsessionid=1/admin", "v1/messages/%252e%252e/admin"]) {
      expect(() => upstreamUrl("https://api.example/", raw, "")).toThrow(/Invalid proxy path/);
    }
  });
  test("@, ;, unicode dots, encoded ?/# and very long paths stay on api_base_url's origin and under its prefix", () => {
    const base = "https://api.example/v1";
    for (const raw of ["a@evil.example/x", "%40evil.example/x", "a;b=c/d", "%EF%BC%8E%EF%BC%8E/admin", "x%3Fy", "x%23y", "a:b@c", "x".repeat(10_000)]) {
      const u = upstreamUrl(base, raw, "?q=1");
      expect({ raw: raw.slice(0, 20), origin: u.origin, under: u.pathname.startsWith("/v1/"), search: u.search }).toEqual({
        raw: raw.slice(0, 20),
        origin: "https://api.example",
        under: true,
        search: "?q=1",
      });
    }
  });
});
