import { describe, expect, test } from "bun:test";
import {
  SECURITY_HEADERS,
  STYLE_HASH,
  escapeHtml,
  formActionSources,
  htmlResponse,
  relativeExpiry,
  renderCodeResultPage,
  renderConsentPage,
  renderDeniedPage,
  renderErrorPage,
  type ConsentView,
} from "../../../../src/gateway/pages/index.ts";
import { STYLESHEET } from "../../../../src/gateway/pages/style.ts";

const now = new Date("2025-06-01T14:00:00Z");
const HOSTILE = [`<script>alert(1)</script>`, `"><img src=x onerror=alert(1)>`, `' onmouseover='alert(1)`];

function view(over: Partial<ConsentView> = {}): ConsentView {
  return {
    actionUrl: "/ath/consent/h_123",
    csrfToken: "csrf_abc",
    provider: { id: "demo", displayName: "Demo Notes (sandbox)" },
    scopes: [{ name: "notes:read", description: "Read your notes" }, { name: "notes:write" }],
    agent: { agentId: "https://agent.example/a", developerName: "Acme", developerId: "acme-1", purpose: "Summaries" },
    expiresAt: new Date(now.getTime() + 9 * 60_000 + 30_000),
    now,
    ...over,
  };
}

const OUR_TAGS = new Set(["!doctype", "html", "head", "meta", "title", "style", "body", "main", "p", "h1", "h2", "ul", "li", "span", "div", "dl", "dt", "dd", "form", "input", "button", "pre", "label"]);

/** The payload appears only as escaped text: every tag in the page is one of ours and carries no event handler. */
function expectInert(html: string, payload: string) {
  expect(html).not.toContain(payload);
  expect(html).toContain(escapeHtml(payload));
  for (const tag of html.match(/<[^>]*>/g) ?? []) {
    const name = /^<\/?([!a-z0-9]+)/i.exec(tag)?.[1]?.toLowerCase() ?? tag;
    expect(OUR_TAGS.has(name) ? "ours" : tag).toBe("ours");
    // attribute values cannot hold a raw quote (escaped), so blanking them leaves only real attribute names
    expect(tag.replace(/"[^"]*"/g, "\"\"")).not.toMatch(/\son[a-z]+\s*=/i);
  }
}

describe("escapeHtml", () => {
  test("escapes the five HTML-significant characters", () => {
    expect(escapeHtml(`&<>"'`)).toBe("&amp;&lt;&gt;&quot;&#39;");
    expect(escapeHtml("plain text")).toBe("plain text");
  });
});

describe("consent page", () => {
  test("shows provider, each scope with its description, agent, developer and purpose", () => {
    const html = renderConsentPage(view());
    expect(html).toContain("Demo Notes (sandbox)");
    expect(html).toMatch(/notes:read<\/span><span class="scope-desc">Read your notes/);
    expect(html).toMatch(/notes:write<\/span><\/li>/);
    expect(html).toContain("https://agent.example/a");
    expect(html).toContain("Acme (acme-1)");
    expect(html).toContain("Summaries");
  });

  test("the agent's claims are marked as claimed and not verified", () => {
    expect(renderConsentPage(view())).toContain("Claimed by the agent — not verified by the gateway");
  });

  test("the form posts to the action URL with the CSRF token and Approve/Deny decisions", () => {
    const html = renderConsentPage(view({ csrfToken: `t"ok` }));
    expect(html).toContain(`<form method="post" action="/ath/consent/h_123">`);
    expect(html).toContain(`<input type="hidden" name="csrf" value="t&quot;ok">`);
    expect(html).toMatch(/<button type="submit" name="decision" value="approve"[^>]*>Approve<\/button>/);
    expect(html).toMatch(/<button type="submit" name="decision" value="deny"[^>]*>Deny<\/button>/);
  });

  test("the expiry is stated relatively and in UTC", () => {
    expect(renderConsentPage(view())).toContain("expires in 9 minutes (2025-06-01 14:09 UTC)");
    expect(renderConsentPage(view({ expiresAt: new Date(now.getTime() - 1) }))).toContain("expired at 2025-06-01 13:59 UTC");
  });

  test("hostile purpose, agent id, developer and scope descriptions render inert", () => {
    for (const payload of HOSTILE) {
      const html = renderConsentPage(
        view({
          scopes: [{ name: payload, description: payload }],
          agent: { agentId: payload, developerName: payload, developerId: payload, purpose: payload },
          provider: { id: "demo", displayName: payload },
          actionUrl: payload,
          csrfToken: payload,
        }),
      );
      expectInert(html, payload);
    }
  });

  test("a missing purpose says none was given", () => {
    expect(renderConsentPage(view({ agent: { ...view().agent, purpose: null } }))).toContain("none given");
  });

  test("the page has a viewport and no script or external asset", () => {
    const html = renderConsentPage(view());
    expect(html).toContain(`<meta name="viewport" content="width=device-width, initial-scale=1">`);
    expect(html).not.toMatch(/<script|<link|src=|https?:\/\/(?!agent\.example)/);
  });
});

describe("result and error pages", () => {
  test("the code page shows the code, session and command, escaped", () => {
    const html = renderCodeResultPage({
      providerName: "Demo <b>",
      code: "ath_code_x",
      sessionId: "ath_sess_y",
      command: "ath token --code ath_code_x --session ath_sess_y",
      expiresAt: new Date(now.getTime() + 300_000),
      now,
    });
    expect(html).toContain("Access approved");
    expect(html).toContain("<pre>ath_code_x</pre>");
    expect(html).toContain("<pre>ath token --code ath_code_x --session ath_sess_y</pre>");
    expect(html).toContain("Demo &lt;b&gt;");
    expect(html).toContain("expires in 5 minutes");
  });

  test("the denied page says access was denied and the agent will be told", () => {
    const html = renderDeniedPage({ providerName: `"><img onerror=x>` });
    expect(html).toContain("Access denied");
    expect(html).toContain("The agent will be told");
    expectInert(html, `"><img onerror=x>`);
  });

  test("the error page shows title, message, hint and code, escaped", () => {
    const html = renderErrorPage({ status: 400, title: "Link expired", message: "<script>x</script>", hint: "Start again", code: "SESSION_EXPIRED" });
    expect(html).toContain("Link expired");
    expect(html).toContain("Start again");
    expect(html).toContain("HTTP 400 · SESSION_EXPIRED");
    expectInert(html, "<script>x</script>");
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

describe("relativeExpiry", () => {
  test("rounds down and names the unit", () => {
    const at = (s: number) => relativeExpiry(new Date(now.getTime() + s * 1000), now);
    expect([at(-1), at(0), at(59), at(60), at(119), at(599), at(7200), at(3 * 86400)]).toEqual([
      "already", "already", "in less than a minute", "in 1 minute", "in 1 minute", "in 9 minutes", "in 2 hours", "in 3 days",
    ]);
  });
});
