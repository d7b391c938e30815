/** Who an MCP client is (DESIGN §18): metadata-document client ids (https; loopback http only under --dev), redirect URIs (OAuth 2.1), which clients run on this machine. */
import { describe, expect, test } from "bun:test";
import type { Gateway } from "../../../../src/gateway/context.ts";
import { checkRedirectUris, isDocumentClientId, localhostOnly, redirectHost, resolveClient } from "../../../../src/gateway/oauth-server/clients.ts";
import { OAuthError } from "../../../../src/gateway/oauth-server/errors.ts";

const gw = (dev: boolean, fetch: Gateway["fetch"] = () => Promise.reject(new Error("no network"))) =>
  ({ opts: { dev }, fetch, now: () => 1_700_000_000_000 }) as unknown as Gateway;
const m = (redirect_uris: string[]) => ({ redirect_uris, grant_types: [], response_types: [], token_endpoint_auth_method: "none" as const });

describe("client ID metadata documents", () => {
  test("https ids name documents; loopback http only under --dev; nothing else", () => {
    expect(isDocumentClientId(gw(false), "https://app.example/client.json")).toBe(true);
    expect(isDocumentClientId(gw(false), "http://127.0.0.1:8080/client.json")).toBe(false);
    expect(isDocumentClientId(gw(true), "http://127.0.0.1:8080/client.json")).toBe(true);
    expect(isDocumentClientId(gw(true), "http://app.example/client.json")).toBe(false);
    expect(isDocumentClientId(gw(true), "mcp_abc")).toBe(false);
  });

  test("a document URL without a path, or with a fragment or credentials, is refused before any fetch", async () => {
    let fetched = 0;
    const g = gw(false, () => {
      fetched++;
      return Promise.reject(new Error("no"));
    });
    for (const id of ["https://app.example/", "https://app.example/c.json#x", "https://u:p@app.example/c.json"]) {
      let why = "";
      expect(await resolveClient(g, id, (w) => (why = w))).toBeNull();
      expect(why).toContain("path");
    }
    expect(fetched).toBe(0);
  });

  test("a private host is refused by the identity fetch's rules, the reason given", async () => {
    let why = "";
    expect(await resolveClient(gw(false, fetch), "https://10.0.0.1/client.json", (w) => (why = w))).toBeNull();
    expect(why).toMatch(/could not be fetched: .*private/);
  });
});

describe("redirect URIs", () => {
  test("javascript:, fragments, userinfo, control characters and non-loopback http (--dev or not) are refused as invalid_redirect_uri", () => {
    for (const uri of ["javascript:alert(1)", "https://app.example/cb#frag", "https://a@app.example/cb", "https://app.example/cb\r\nX: y", "http://app.example/cb", "not a uri"]) {
      expect(() => checkRedirectUris([uri])).toThrow(OAuthError);
    }
    expect(() => checkRedirectUris(["https://app.example/cb", "http://127.0.0.1/cb", "http://[::ffff:127.0.0.1]/cb", "vscode://ext/cb"])).not.toThrow();
  });

  test("the consent page's facts: the hosts returned to, and whether all of them are this machine", () => {
    expect(redirectHost(m(["http://127.0.0.1:33418/cb", "http://localhost:33418/cb"]))).toBe("127.0.0.1:33418, localhost:33418");
    expect(localhostOnly(m(["http://127.0.0.1:33418/cb"]))).toBe(true);
    expect(localhostOnly(m(["http://127.0.0.1:33418/cb", "https://claude.ai/api/mcp/auth_callback"]))).toBe(false);
    for (const uri of ["http://[::ffff:127.0.0.1]:1/cb", "http://127.9.9.9/cb", "http://localhost./cb", "http://a.localhost/cb", "https://localhost/cb", "cursor://x/cb"]) {
      expect({ uri, local: localhostOnly(m([uri])) }).toEqual({ uri, local: true });
    }
    for (const uri of ["http://[::ffff:10.0.0.1]/cb", "http://128.0.0.1/cb", "http://localhost.example/cb", "https://0.0.0.0/cb"]) {
      expect({ uri, local: localhostOnly(m([uri])) }).toEqual({ uri, local: false });
    }
  });
});
