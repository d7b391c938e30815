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
  expiresAt: Date;
  now: Date;
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
  const body = `<h1>An agent wants access to your ${provider} account</h1>
<p class="lead">If you approve, ${provider} will ask you to sign in and confirm. The agent gets only the access listed here, through the gateway at <strong>${escapeHtml(v.gatewayHost)}</strong>.</p>
<h2>Access requested</h2>
<ul class="scopes">
${scopes || '<li><span class="scope-desc">No scopes</span></li>'}
</ul>
${renderAgentSection(v.agent)}
${renderDecisionForm(v)}`;
  return renderPage({ title: `Allow access to ${v.provider.displayName}?`, body, brand: `ath gateway · ${v.gatewayHost}` });
}
