/**
 * The approval page (GET /ath/approvals/{id}, DESIGN §15): one exact request an agent wants to make — the agent (its
 * id proven by a signature; developer and purpose only claimed, and marked so) or, for an MCP client, the client as the
 * consent page names it (it proved no identity: a dynamically registered client is "claimed — not verified", one known
 * by its metadata document "published at its client id"), the provider, and the request as the bytes that will be
 * sent (pages/request-view.ts: path, raw query and its pairs, bound headers, raw body, a formatted view only when
 * faithful), and the time left — with Approve / Deny for the one
 * person allowed to decide it (endpoints/approvals.ts shows it to no one else). Same shell, CSP and headers as the
 * consent page.
 */
import { renderAgentSection, renderDecisionForm } from "./agent.ts";
import { renderMcpClientSection, type McpClientView } from "./consent.ts";
import { escapeHtml, renderPage } from "./layout.ts";
import { renderRequestView, type RequestView } from "./request-view.ts";
import { renderDelegationSection, type DelegationView } from "./delegation.ts";

export interface ApprovalPageView {
  gatewayHost: string;
  status: "pending" | "approved" | "denied" | "expired" | "used";
  /** The form posts here. */
  actionUrl: string;
  csrfToken: string;
  provider: { id: string; displayName: string };
  agent: { agentId: string; developerName: string; developerId: string; purpose: string | null };
  /** Set when an MCP client asks (DESIGN §18): shown instead of the agent, which proved nothing with a key. */
  mcpClient?: McpClientView;
  /** The request as it will be sent (pages/request-view.ts). */
  request: RequestView;
  /** DESIGN §23: when the agent's token was delegated to it, the agents it came through, nearest first. */
  delegatedBy?: DelegationView;
  expiresAt: Date;
  now: Date;
}

export function renderApprovalPage(v: ApprovalPageView): string {
  const provider = escapeHtml(v.provider.displayName);
  const decided: Record<typeof v.status, string> = {
    pending: "",
    approved: `<p class="status-ok">This request was approved. The agent may now send it once.</p>`,
    denied: `<p class="status-bad">This request was denied. It will not be sent.</p>`,
    expired: `<p class="status-bad">This request expired before it was decided or sent. The agent must ask again.</p>`,
    used: `<p class="status-ok">This request was approved and sent.</p>`,
  };
  const form =
    v.status === "pending"
      ? renderDecisionForm(v)
      : "";
  const body = `<h1>${v.mcpClient ? "An MCP client" : "An agent"} wants to send this request to ${provider}</h1>
<p class="lead">Approve only if you want exactly this request sent with your ${provider} account. Approving sends it once; the gateway at <strong>${escapeHtml(v.gatewayHost)}</strong> refuses any other.</p>
${decided[v.status]}
<h2>The request</h2>
${renderRequestView(v.request)}
${v.mcpClient ? renderMcpClientSection(v.mcpClient) : renderAgentSection(v.agent)}
${renderDelegationSection(v.delegatedBy)}
${form}`;
  return renderPage({ title: `Approve this request to ${v.provider.displayName}?`, body, brand: `ath gateway · ${v.gatewayHost}` });
}

export function renderApprovalDecidedPage(v: { decision: "approve" | "deny"; providerName: string; method: string; path: string }): string {
  const what = `<code class="id">${escapeHtml(v.method)} ${escapeHtml(safeDecode(v.path))}</code>`;
  const body =
    v.decision === "approve"
      ? `<h1 class="status-ok">Request approved</h1>
<p class="lead">The agent may now send ${what} to ${escapeHtml(v.providerName)} — once, exactly as shown. You can close this tab.</p>`
      : `<h1 class="status-bad">Request denied</h1>
<p class="lead">${what} will not be sent to ${escapeHtml(v.providerName)}. The agent is told you denied it. You can close this tab.</p>`;
  return renderPage({ title: v.decision === "approve" ? "Request approved" : "Request denied", body });
}

/** An admin approval seen from a browser: an admin decides it in the console; the request is shown there. */
export function renderApprovalAdminPage(v: { providerName: string; status: ApprovalPageView["status"]; consoleUrl: string }): string {
  const body = `<h1>An admin decides this request</h1>
<p>An agent asked to send a request to ${escapeHtml(v.providerName)} that an admin of this gateway must approve. It is <strong>${escapeHtml(v.status)}</strong>.</p>
<p class="hint">Admins see the request and decide it in the admin console: <a href="${escapeHtml(v.consoleUrl)}">Approvals</a>.</p>`;
  return renderPage({ title: "An admin decides this request", body });
}

/**
 * The 403 page for a browser that has not proven it belongs to the approver: sign in at the provider (when it names
 * its users), or use the browser that gave consent.
 */
export function renderApprovalSigninPage(v: { providerName: string; signin?: { actionUrl: string; csrfToken: string } }): string {
  const provider = escapeHtml(v.providerName);
  const body = v.signin
    ? `<h1 class="status-bad">You cannot decide this request yet</h1>
<p>Only the person who gave this agent access to their ${provider} account can approve its requests. This browser has not shown that it is theirs.</p>
<p class="hint">If that is you, sign in at ${provider}: the gateway checks it is the same account, then shows you the request. Anyone else cannot decide it.</p>
<form method="post" action="${escapeHtml(v.signin.actionUrl)}">
<input type="hidden" name="csrf" value="${escapeHtml(v.signin.csrfToken)}">
<div class="actions"><button type="submit" class="primary">Sign in at ${provider}</button></div>
</form>
<p class="error-code">HTTP 403 · APPROVAL_REQUIRED</p>`
    : `<h1 class="status-bad">You cannot decide this request</h1>
<p>Only the person who gave this agent access to their ${provider} account can approve its requests, and ${provider} does not tell the gateway who signs in.</p>
<p class="hint">Open the link in the browser where you approved the agent's access.</p>
<p class="error-code">HTTP 403 · APPROVAL_REQUIRED</p>`;
  return renderPage({ title: "You cannot decide this request", body });
}

// internal

/** For reading only (the digest covers the bytes as sent): percent-decoded, `+` as a space in a query. */
function safeDecode(s: string, query = false): string {
  try {
    return decodeURIComponent(query ? s.replace(/\+/g, "%20") : s);
  } catch {
    return s;
  }
}
