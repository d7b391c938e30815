/**
 * "The agent" section of the pages that ask a person to decide (consent, a single request's approval): what the
 * gateway proved — the agent's identity, by the attestation signature — apart from what the agent only claims
 * (developer, purpose), marked as such. Everything escaped.
 */
import { escapeHtml } from "./layout.ts";

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
