/**
 * The consent page (GET /ath/consent/{handle}): which provider, which scopes, which agent (its identity is proven
 * by the attestation signature; its developer and purpose are only claimed, and marked as such) — and until when. Approve and Deny post back to the gateway with the CSRF token.
 */
import { renderAgentSection, renderDecisionForm } from "./agent.ts";
import { escapeHtml, renderPage } from "./layout.ts";

export interface ConsentView {
  /** The form POSTs here (same origin). */
  actionUrl: string;
  /** The gateway's host, named on the page: the person checks it is the gateway they expect. */
  gatewayHost: string;
  /** Hidden field "csrf". */
  csrfToken: string;
  provider: { id: string; displayName: string };
  scopes: { name: string; description?: string }[];
  agent: { agentId: string; developerName: string; developerId: string; purpose?: string | null };
  /** Set when an MCP client asks (DESIGN §18): shown instead of the agent section. */
  mcpClient?: McpClientView;
  expiresAt: Date;
  now: Date;
}

export interface McpClientView {
  /** Its metadata's client_name (claimed), or null. */
  clientName: string | null;
  clientId: string;
  /** Where the person is sent back to (the host of its redirect URIs). */
  redirectHost: string;
  /** Every redirect URI is on the person's own machine: any local program could have registered this name. */
  localhostOnly: boolean;
  /** The client_id is the URL of its metadata document (its host vouches for the metadata). */
  document: boolean;
}

export function renderMcpClientSection(c: McpClientView): string {
  const name = c.clientName?.trim() ? escapeHtml(c.clientName) : '<span class="hint">no name given</span>';
  const warning = c.localhostOnly
    ? `<p class="notice"><strong>This client runs on your own computer</strong> (it returns to ${escapeHtml(c.redirectHost)}). Any program there could use this name: approve only if you just started this connection yourself.</p>`
    : "";
  return `<h2>The MCP client</h2>
<div class="claim">
<p class="claim-label">${c.document ? "Published at its client id — the host below vouches for it" : "Claimed by the client — not verified by the gateway"}</p>
<dl>
<dt>Client</dt><dd>${name}</dd>
<dt>Client id</dt><dd><code class="id">${escapeHtml(c.clientId)}</code></dd>
<dt>Returns to</dt><dd><code class="id">${escapeHtml(c.redirectHost)}</code></dd>
</dl>
</div>
${warning}`;
}

export function renderConsentPage(v: ConsentView): string {
  const provider = escapeHtml(v.provider.displayName);
  const scopes = v.scopes
    .map(
      (s) =>
        `<li><span class="scope-name">${escapeHtml(s.name)}</span>` +
        (s.description ? `<span class="scope-desc">${escapeHtml(s.description)}</span>` : "") +
        "</li>",
    )
    .join("\n");
  const who = v.mcpClient ? "An MCP client" : "An agent";
  const body = `<h1>${who} wants access to your ${provider} account</h1>
<p class="lead">If you approve, ${provider} will ask you to sign in and confirm. The ${v.mcpClient ? "client" : "agent"} gets only the access listed here, through the gateway at <strong>${escapeHtml(v.gatewayHost)}</strong>.</p>
<h2>Access requested</h2>
<ul class="scopes">
${scopes || '<li><span class="scope-desc">No scopes</span></li>'}
</ul>
${v.mcpClient ? renderMcpClientSection(v.mcpClient) : renderAgentSection(v.agent)}
${renderDecisionForm(v)}`;
  return renderPage({ title: `Allow access to ${v.provider.displayName}?`, body, brand: `ath gateway · ${v.gatewayHost}` });
}
