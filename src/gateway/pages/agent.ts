/**
 * The parts of the pages that ask a person to decide (consent, a single request's approval): "the agent" — what the
 * gateway proved, the agent's identity by the attestation signature, apart from what the agent only claims
 * (developer, purpose), marked as such — and the Deny / Approve form with its CSRF token and the time left.
 * Everything escaped.
 */
import { escapeHtml } from "./layout.ts";
import { expiryHtml } from "./time.ts";

export interface AgentView {
  agentId: string;
  developerName: string;
  developerId: string;
  purpose?: string | null;
}

export function renderAgentSection(agent: AgentView): string {
  const purpose = agent.purpose?.trim()
    ? `<dt>Purpose</dt><dd>${escapeHtml(agent.purpose)}</dd>`
    : `<dt>Purpose</dt><dd class="hint">none given</dd>`;
  return `<h2>The agent</h2>
<dl class="identity">
<dt>Agent</dt><dd><code class="id">${escapeHtml(agent.agentId)}</code></dd>
</dl>
<p class="hint">The agent proved, with a signature, that it holds the key of this identity.</p>
<div class="claim">
<p class="claim-label">Claimed by the agent — not verified by the gateway</p>
<dl>
<dt>Developer</dt><dd>${escapeHtml(agent.developerName)} (${escapeHtml(agent.developerId)})</dd>
${purpose}
</dl>
</div>`;
}

/** Deny and Approve, posted to `actionUrl` (same origin) with the CSRF token; then when the request expires. */
export function renderDecisionForm(v: { actionUrl: string; csrfToken: string; expiresAt: Date; now: Date }): string {
  return `<form method="post" action="${escapeHtml(v.actionUrl)}">
<input type="hidden" name="csrf" value="${escapeHtml(v.csrfToken)}">
<div class="actions">
<button type="submit" name="decision" value="deny">Deny</button>
<button type="submit" name="decision" value="approve" class="primary">Approve</button>
</div>
</form>
<p class="expiry">This request ${expiryHtml(v.expiresAt, v.now)}.</p>`;
}
