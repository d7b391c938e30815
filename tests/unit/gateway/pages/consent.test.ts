/** The consent page (DESIGN §3 Phase B step 2): what the person is shown and asked, all of it escaped. */
import { describe, expect, test } from "bun:test";
import { renderConsentPage, type ConsentView } from "../../../../src/gateway/pages/index.ts";
import { expectInert, HOSTILE } from "../../../helpers/html.ts";

const now = new Date("2025-06-01T14:00:00Z");

function view(over: Partial<ConsentView> = {}): ConsentView {
  return {
    actionUrl: "/ath/consent/h_123",
    gatewayHost: "gw.example:8443",
    csrfToken: "csrf_abc",
    provider: { id: "demo", displayName: "Demo Notes (sandbox)" },
    scopes: [{ name: "notes:read", description: "Read your notes" }, { name: "notes:write" }],
    agent: { agentId: "https://agent.example/a", developerName: "Acme", developerId: "acme-1", purpose: "Summaries" },
    expiresAt: new Date(now.getTime() + 9 * 60_000 + 30_000),
    now,
    ...over,
  };
}

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

  test("names the gateway (its host) in the header and the lead; the agent id and the expiry time never wrap mid-token", () => {
    const html = renderConsentPage(view());
    expect(html).toContain('<p class="brand">ath gateway · gw.example:8443</p>');
    expect(html).toContain("through the gateway at <strong>gw.example:8443</strong>");
    expect(html).toContain('<code class="id">https://agent.example/a</code>');
    expect(html).toMatch(/<time class="nowrap" datetime="2025-06-01T14:09:30.000Z">2025-06-01 14:09 UTC<\/time>/);
    for (const h of HOSTILE) expectInert(renderConsentPage(view({ gatewayHost: h })), h);
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
    expect(renderConsentPage(view()).replace(/<[^>]*>/g, "")).toContain("expires in 9 minutes (2025-06-01 14:09 UTC)");
    expect(renderConsentPage(view({ expiresAt: new Date(now.getTime() - 1) })).replace(/<[^>]*>/g, "")).toContain("expired at 2025-06-01 13:59 UTC");
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

  test("control, format and bidi characters in a registrant's words are shown visibly, never raw (DESIGN §14)", () => {
    const purpose = "Summaries\u202e(evil)\u200b\u001b[2J\u0007done";
    const html = renderConsentPage(view({ agent: { ...view().agent, purpose, developerName: "Ac\u2066me" } }));
    expect(html).toContain("Summaries⟨U+202E⟩(evil)⟨U+200B⟩⟨U+001B⟩[2J⟨U+0007⟩done");
    expect(html).toContain("Ac⟨U+2066⟩me");
    expect(html).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u200b-\u200f\u202a-\u202e\u2066-\u2069]/);
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
