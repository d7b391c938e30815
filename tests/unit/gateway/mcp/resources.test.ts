/**
 * Which door a front-door token's RFC 8707 resource names (mcp/access.ts `resourcePath`): the path under the base
 * URL, whichever instance of the deployment issued it — never another door's.
 */
import { describe, expect, test } from "bun:test";
import { resourcePath } from "../../../../src/gateway/mcp/access.ts";

const same = (a: string, b: string) => resourcePath(a) !== null && resourcePath(a) === resourcePath(b);

describe("resourcePath", () => {
  test("one door reached at two instances' base URLs is one resource; a trailing slash changes nothing", () => {
    expect(same("http://127.0.0.1:4101/mcp/mail", "http://127.0.0.1:4102/mcp/mail")).toBe(true);
    expect(same("https://a.gw.example/mcp/g/work/", "https://b.gw.example/mcp/g/work")).toBe(true);
    expect(same("https://gw.example/mcp", "https://gw.example/mcp")).toBe(true);
  });

  test("another door is another resource: a provider, the federated URL, a group, a longer path", () => {
    const mail = "https://gw.example/mcp/mail";
    for (const other of ["https://gw.example/mcp/other", "https://gw.example/mcp", "https://gw.example/mcp/g/mail", "https://gw.example/mcp/mail/x", "https://gw.example/ath/proxy/mail"]) {
      expect({ other, same: same(other, mail) }).toEqual({ other, same: false });
    }
  });

  test("what is not a URL names no door", () => {
    expect(resourcePath("")).toBeNull();
    expect(resourcePath("/mcp/mail")).toBeNull();
  });
});
