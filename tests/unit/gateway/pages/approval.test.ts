/**
 * The approval page (DESIGN §15) tells the person only what the gateway knows of who asks (issue 35): an agent proved
 * its identity with a signature; an MCP client proved nothing — a dynamically registered one is "claimed, not
 * verified", one known by its metadata document is vouched for by that document's host —, as on the consent page.
 */
import { describe, expect, test } from "bun:test";
import { renderApprovalPage, type ApprovalPageView } from "../../../../src/gateway/pages/approval.ts";
import { expectInert, HOSTILE } from "../../../helpers/html.ts";

const now = new Date("2026-06-01T14:00:00Z");
const text = (html: string) => html.replace(/<style[\s\S]*?<\/style>/g, "").replace(/<[^>]+>/g, " ").replace(/\s+/g, " ");

function view(over: Partial<ApprovalPageView> = {}): ApprovalPageView {
  return {
    gatewayHost: "gw.example",
    status: "pending",
    actionUrl: "/ath/approvals/ath_apr_1",
    csrfToken: "csrf",
    provider: { id: "mail", displayName: "Mail" },
    agent: { agentId: "did:key:zAgent", developerName: "Acme", developerId: "acme", purpose: "Reports" },
    request: { method: "POST", path: "/v1/send", query: "", headers: {}, body: null },
    expiresAt: new Date(now.getTime() + 300_000),
    now,
    ...over,
  };
}
const mcp = { clientName: "Test MCP Client", clientId: "mcp_abc", redirectHost: "127.0.0.1:4711", localhostOnly: true, document: false };

describe("who asks, on the approval page", () => {
  test("an agent: its id proven with a signature, its developer and purpose marked as claimed", () => {
    const t = text(renderApprovalPage(view()));
    expect(t).toContain("An agent wants to send this request to Mail");
    expect(t).toContain("The agent proved, with a signature, that it holds the key of this identity.");
    expect(t).toContain("Claimed by the agent — not verified by the gateway");
  });

  test("a dynamically registered MCP client proved nothing: claimed, not verified — no word of a signature; a local one is warned about", () => {
    const t = text(renderApprovalPage(view({ agent: { agentId: "mcp:mcp_abc", developerName: "Test MCP Client", developerId: "127.0.0.1:4711", purpose: "MCP client" }, mcpClient: mcp })));
    expect(t).toContain("An MCP client wants to send this request to Mail");
    expect(t).not.toContain("signature");
    expect(t).not.toMatch(/\bproved\b/);
    expect(t).toContain("Claimed by the client — not verified by the gateway");
    expect(t).toContain("Test MCP Client");
    expect(t).toContain("mcp_abc");
    expect(t).toContain("This client runs on your own computer");
  });

  test("an MCP client known by its metadata document: vouched for by the document's host, still no signature", () => {
    const t = text(renderApprovalPage(view({ mcpClient: { ...mcp, clientId: "https://app.example/client.json", redirectHost: "app.example", localhostOnly: false, document: true } })));
    expect(t).toContain("Published at its client id — the host below vouches for it");
    expect(t).not.toContain("signature");
    expect(t).not.toContain("your own computer");
  });

  test("what the client registered is escaped", () => {
    for (const h of HOSTILE) expectInert(renderApprovalPage(view({ mcpClient: { ...mcp, clientName: h } })), h);
  });
});
