/** The canonical request (DESIGN §16): its two forms, ambiguous paths, rule matching form to form, the digest. */
import { describe, expect, test } from "bun:test";
import { AthError } from "../../../../src/protocol/index.ts";
import { boundHeaders, canonicalRequest, ruleMatches } from "../../../../src/gateway/rules/canonical-request.ts";
import { requestDigest } from "../../../../src/gateway/rules/request-digest.ts";

const c = (path: string, method = "POST", search = "", pathParams = false) => canonicalRequest(method, path.slice(1), search, { pathParams });

function reason(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (err) {
    if (err instanceof AthError) return String(err.details?.reason);
    throw err;
  }
  return undefined;
}

describe("the two forms", () => {
  test("literal is the decoded path as forwarded; loose folds case, trailing dots/whitespace, one .json/.xml, a trailing /", () => {
    expect(c("/v1/Messages/send%20.json").literal).toBe("/v1/Messages/send .json");
    expect(c("/v1/Messages/send%20.json").loose).toBe("/v1/messages/send");
    expect(c("/v1/messages/send/").literal).toBe("/v1/messages/send/");
    expect(c("/v1/messages/send/").loose).toBe("/v1/messages/send");
    expect(c("/v1/%C5%BFend").loose).toBe("/v1/send");
    expect(c("/v1/a...").looseSegments).toEqual(["v1", "a"]);
    expect(c("/v1/...").looseSegments).toEqual(["v1", ""]);
    expect(c("/v1/x", "GET", "?b=2&a=1").query).toBe("b=2&a=1");
    expect(c("/").literal).toBe("/");
  });

  test("ambiguous paths are refused with reason ambiguous_path", () => {
    for (const p of ["/a;b", "/a%3Bb", "/a//b", "/a%2Fb", "/a%5Cb", "/a%2573", "/a%00", "/a%09", "/a%7F", "/a%C2%85", "/a%E2%80%8B", "/a%E2%80%AE", "/%2e%2e/a", "/%2E/a", "/a%ZZ", "/a%FF"]) {
      expect({ p, reason: reason(() => c(p)) }).toEqual({ p, reason: "ambiguous_path" });
    }
    expect(reason(() => c("/a;b", "GET", "", true))).toBeUndefined();
    expect(c("/A;b/c;d", "GET", "", true).literal).toBe("/A/c");
    expect(reason(() => c("/..;x/a", "GET", "", true))).toBe("ambiguous_path");
    expect(reason(() => c("/;x/a", "GET", "", true))).toBe("ambiguous_path");
  });
});

describe("rules, form to form", () => {
  test("allow-lists need both forms, deny-lists either; HEAD is GET; a decoded space matches %20", () => {
    expect(ruleMatches("POST /v1/messages/send", c("/v1/messages/SEND"), "either")).toBe(true);
    expect(ruleMatches("POST /v1/messages/send", c("/v1/messages/SEND"), "both")).toBe(false);
    expect(ruleMatches("POST /chat.postMessage", c("/chat.postMessage"), "both")).toBe(true);
    expect(ruleMatches("POST /chat.postMessage", c("/chat.postmessage"), "both")).toBe(false);
    expect(ruleMatches("GET /v1/x", c("/v1/x", "HEAD"), "both")).toBe(true);
    expect(ruleMatches("HEAD /v1/x", c("/v1/x", "GET"), "either")).toBe(false);
    expect(ruleMatches("DELETE /drafts/my draft", c("/drafts/my%20draft", "DELETE"), "both")).toBe(true);
    expect(ruleMatches("GET /v1/*", c("/v1/...", "GET"), "both")).toBe(false);
    expect(ruleMatches("GET /v1/*", c("/v1/", "GET"), "both")).toBe(false);
    expect(ruleMatches("GET /v1/**", c("/v1/", "GET"), "both")).toBe(true);
  });
});

describe("the digest", () => {
  const base = { ...c("/v1/upload", "POST", "?a=1&b=2"), headers: boundHeaders({ "content-type": "application/json", "dropbox-api-arg": '{"path":"/a"}', "user-agent": "x", accept: "*/*" }), body: new TextEncoder().encode("{}") };
  test("binds method, literal path, query order, bound headers and body; not the unbound headers", () => {
    const d = requestDigest(base);
    expect(requestDigest({ ...base, headers: boundHeaders({ "content-type": "application/json", "dropbox-api-arg": '{"path":"/a"}', "user-agent": "y" }) })).toBe(d);
    expect(requestDigest({ ...base, headers: { ...base.headers, "dropbox-api-arg": '{"path":"/b"}' } })).not.toBe(d);
    expect(requestDigest({ ...base, headers: { ...base.headers, "content-type": "text/plain" } })).not.toBe(d);
    expect(requestDigest({ ...base, query: "b=2&a=1" })).not.toBe(d);
    expect(requestDigest({ ...base, body: new TextEncoder().encode("{ }") })).not.toBe(d);
    expect(requestDigest({ ...base, ...c("/v1/Upload", "POST", "?a=1&b=2") })).not.toBe(d);
    expect(Object.keys(base.headers)).toEqual(["content-type", "dropbox-api-arg"]);
  });
});
