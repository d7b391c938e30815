/** The result pages of the consent flow: the code page, the denied page and the error page, escaped. */
import { describe, expect, test } from "bun:test";
import { renderCodeResultPage, renderDeniedPage, renderErrorPage } from "../../../../src/gateway/pages/index.ts";
import { expectInert } from "../../../helpers/html.ts";

const now = new Date("2025-06-01T14:00:00Z");

describe("result and error pages", () => {
  test("the code page shows the code, session and command, escaped", () => {
    const html = renderCodeResultPage({
      providerName: "Demo <b>",
      gatewayHost: "gw.example",
      scopes: ["notes:read", "<script>"],
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
    // what was granted, and how to take it back
    expect(html).toContain('<span class="scope-name">notes:read</span>');
    expectInert(html, "<script>");
    expect(html).toContain("ath revoke --provider");
    expect(html).toContain("the gateway at <strong>gw.example</strong> revokes it in its admin console");
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
