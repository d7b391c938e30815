/** The request line's memo (proxy/request-line.ts): remembered per configuration object, never a refusal, verdicts per scope set. */
import { describe, expect, test } from "bun:test";
import type { ProviderConfig } from "../../../../src/protocol/index.ts";
import { requestLine } from "../../../../src/gateway/proxy/request-line.ts";

const config = (rules?: Record<string, string[]>) =>
  ({ api_base_url: "https://api.example.com/v1", ...(rules ? { scope_rules: rules } : {}) }) as unknown as ProviderConfig & { api_base_url: string };

describe("requestLine", () => {
  test("the same line of the same configuration is computed once; another configuration computes its own", () => {
    const a = config({ read: ["GET /notes/*"] });
    const first = requestLine(a, "GET", "notes/1", "?q=1");
    expect(requestLine(a, "GET", "notes/1", "?q=1")).toBe(first);
    expect(first.target.href).toBe("https://api.example.com/v1/notes/1?q=1");
    expect(first.canonical.literal).toBe("/notes/1");
    expect(requestLine(a, "GET", "notes/1", "?q=2")).not.toBe(first);
    expect(requestLine(a, "POST", "notes/1", "?q=1")).not.toBe(first);
    const b = config({ write: ["POST /notes"] });
    const other = requestLine(b, "GET", "notes/1", "?q=1");
    expect(other).not.toBe(first);
    expect(other.allows(["read"])).toBe(false);
    expect(first.allows(["read"])).toBe(true);
  });

  test("scope verdicts follow the token's scopes; without scope_rules there is none", () => {
    const line = requestLine(config({ read: ["GET /notes/*"], "*": ["GET /me"] }), "GET", "notes/1", "");
    expect(line.allows([])).toBe(false);
    expect(line.allows(["write"])).toBe(false);
    expect(line.allows(["write", "read"])).toBe(true);
    expect(line.allows(["write"])).toBe(false);
    expect(requestLine(config(), "GET", "notes/1", "").allows(["read"])).toBeUndefined();
  });

  test("a refused line is refused every time (nothing remembered)", () => {
    const c = config({ read: ["GET /*"] });
    for (let i = 0; i < 2; i++) {
      expect(() => requestLine(c, "GET", "a/%2e%2e/b", "")).toThrow(/dot segments/);
      expect(() => requestLine(c, "GET", "send;x=1", "")).toThrow(/';'/);
    }
  });
});
