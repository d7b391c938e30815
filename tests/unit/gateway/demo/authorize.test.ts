/** The sandbox's authorization endpoint and sign-in page (RFC 6749 §4.1.1, RFC 7636). */
import { describe, expect, test } from "bun:test";
import { createDemo } from "../../../../src/gateway/demo/index.ts";
import { BASE, CALLBACK, authorizeUrl, codeFor, signIn } from "../../../helpers/demo.ts";

describe("authorization endpoint (RFC 6749 §4.1.1, RFC 7636)", () => {
  test("a bad client_id or redirect_uri is shown to the user, never redirected", async () => {
    const demo = createDemo({ baseUrl: BASE });
    const overs: Record<string, string | null>[] = [{ client_id: "nope" }, { redirect_uri: "http://evil.example/cb" }, { redirect_uri: null }];
    for (const over of overs) {
      const res = await demo.fetch(new Request(authorizeUrl(demo, over)));
      expect(res.status).toBe(400);
      expect(res.headers.get("location")).toBeNull();
      expect(res.headers.get("content-type")).toBe("text/html; charset=utf-8");
    }
  });

  test("PKCE S256, response_type=code and known scopes are required, errors go back with the state", async () => {
    const demo = createDemo({ baseUrl: BASE });
    const cases: [Record<string, string | null>, string][] = [
      [{ code_challenge: null }, "invalid_request"],
      [{ code_challenge_method: null }, "invalid_request"],
      [{ code_challenge_method: "plain" }, "invalid_request"],
      [{ code_challenge: "short" }, "invalid_request"],
      [{ response_type: "token" }, "unsupported_response_type"],
      [{ scope: "notes:admin" }, "invalid_scope"],
      [{ scope: null }, "invalid_scope"],
    ];
    for (const [over, error] of cases) {
      const res = await demo.fetch(new Request(authorizeUrl(demo, over)));
      expect(res.status).toBe(303);
      const loc = new URL(res.headers.get("location")!);
      expect(`${loc.origin}${loc.pathname}`).toBe(CALLBACK);
      expect([loc.searchParams.get("error"), loc.searchParams.get("state")]).toEqual([error, "st_1234567890abcdef"]);
      expect(loc.searchParams.has("code")).toBe(false);
    }
  });

  test("the sign-in page is labelled SANDBOX, carries a CSRF token and the security headers", async () => {
    const demo = createDemo({ baseUrl: BASE });
    const res = await demo.fetch(new Request(authorizeUrl(demo)));
    const html = await res.text();
    expect(html).toContain("SANDBOX");
    expect(html).toMatch(/name="csrf" value="[A-Za-z0-9_-]{20,}"/);
    expect(html).toMatch(/value="allow"[^>]*>Allow</);
    expect(html).toMatch(/value="cancel"[^>]*>Cancel</);
    expect(html).toContain(`value="Demo User"`);
    expect(res.headers.get("x-frame-options")).toBe("DENY");
    expect(res.headers.get("content-security-policy")).toContain("frame-ancestors 'none'");
    expect(res.headers.get("set-cookie")).toMatch(/^demo_browser=[^;]+; Path=\/demo\/oauth; HttpOnly; SameSite=Lax/);
  });

  test("Allow redirects to the callback with a code and the state", async () => {
    const demo = createDemo({ baseUrl: BASE });
    const { code, location } = await codeFor(demo);
    expect(code).toStartWith("demo_code_");
    expect(location.searchParams.get("state")).toBe("st_1234567890abcdef");
  });

  test("Cancel redirects with error=access_denied and no code", async () => {
    const demo = createDemo({ baseUrl: BASE });
    const res = await signIn(demo, authorizeUrl(demo), "cancel");
    const loc = new URL(res.headers.get("location")!);
    expect([loc.searchParams.get("error"), loc.searchParams.get("state"), loc.searchParams.get("code")]).toEqual(["access_denied", "st_1234567890abcdef", null]);
  });

  test("an answer without the page's CSRF token or from another browser is refused", async () => {
    const demo = createDemo({ baseUrl: BASE });
    const page = await demo.fetch(new Request(authorizeUrl(demo)));
    const html = await page.text();
    const request = /name="request" value="([^"]*)"/.exec(html)![1]!;
    const csrf = /name="csrf" value="([^"]*)"/.exec(html)![1]!;
    const cookie = page.headers.get("set-cookie")!.split(";")[0]!;
    const post = (body: Record<string, string>, c: string) =>
      demo.fetch(new Request(`${BASE}/demo/oauth/authorize`, { method: "POST", body: new URLSearchParams(body), headers: { cookie: c, "content-type": "application/x-www-form-urlencoded" } }));
    expect((await post({ request, csrf: "forged", user: "x", decision: "allow" }, cookie)).status).toBe(403);
    expect((await post({ request, csrf, user: "x", decision: "allow" }, "demo_browser=other")).status).toBe(403);
    // still answerable by the right browser, once
    expect((await post({ request, csrf, user: "x", decision: "allow" }, cookie)).status).toBe(303);
    expect((await post({ request, csrf, user: "x", decision: "allow" }, cookie)).status).toBe(400);
  });

  test("a name without a letter or digit is asked for again", async () => {
    const demo = createDemo({ baseUrl: BASE });
    const res = await signIn(demo, authorizeUrl(demo), "allow", " -- ");
    expect(res.status).toBe(400);
    expect(await res.text()).toContain("Enter a name");
  });
});
