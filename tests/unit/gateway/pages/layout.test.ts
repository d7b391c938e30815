/** What every gateway page shares: HTML escaping and the security headers of each HTML response. */
import { describe, expect, test } from "bun:test";
import { SECURITY_HEADERS, STYLE_HASH, escapeHtml, formActionSources, htmlResponse, renderDeniedPage, renderErrorPage } from "../../../../src/gateway/pages/index.ts";
import { STYLESHEET } from "../../../../src/gateway/pages/style.ts";

describe("escapeHtml", () => {
  test("the five HTML-significant characters are escaped, and nothing else", () => {
    expect(escapeHtml(`&<>"'`)).toBe("&amp;&lt;&gt;&quot;&#39;");
    expect(escapeHtml("plain text")).toBe("plain text");
  });
});

describe("security headers", () => {
  test("every HTML response carries the strict CSP, anti-framing, no-referrer and no-store", async () => {
    const res = htmlResponse(renderDeniedPage({ providerName: "x" }), { status: 403, headers: { "X-Extra": "1" } });
    expect(res.status).toBe(403);
    expect(res.headers.get("content-type")).toBe("text/html; charset=utf-8");
    const csp = res.headers.get("content-security-policy")!;
    for (const d of ["default-src 'none'", `style-src ${STYLE_HASH}`, "form-action 'self'", "frame-ancestors 'none'", "base-uri 'none'"]) {
      expect(csp).toContain(d);
    }
    expect(csp).not.toContain("unsafe-inline");
    expect(res.headers.get("x-frame-options")).toBe("DENY");
    expect(res.headers.get("referrer-policy")).toBe("no-referrer");
    expect(res.headers.get("cache-control")).toBe("no-store");
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    expect(res.headers.get("x-extra")).toBe("1");
    for (const [k, v] of Object.entries(SECURITY_HEADERS)) expect(res.headers.get(k)).toBe(v);
  });

  test("the style hash is the SHA-256 of the one inline stylesheet", async () => {
    const digest = Buffer.from(await crypto.subtle.digest("SHA-256", new TextEncoder().encode(STYLESHEET))).toString("base64");
    expect(STYLE_HASH).toBe(`'sha256-${digest}'`);
    expect(renderErrorPage({ status: 500, title: "t", message: "m" })).toContain(`<style>${STYLESHEET}</style>`);
  });

  test("form-action can list the origins a form's redirects lead to, loopback on any port", () => {
    expect(formActionSources(["https://idp.example/authorize?x=1", "http://127.0.0.1:5555/cb", "http://[::1]:4/cb", null, "javascript:x"])).toEqual([
      "'self'",
      "https://idp.example",
      "http://127.0.0.1:*",
    ]);
    const csp = htmlResponse("", { formAction: ["'self'", "https://idp.example"] }).headers.get("content-security-policy");
    expect(csp).toContain("form-action 'self' https://idp.example;");
  });
});
