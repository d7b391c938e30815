/**
 * A delegated agent's chain on the approval page (DESIGN §23): the agent asking was handed its access by another
 * agent, which may itself have been — the person sees every agent on the way back to the one they gave access to.
 * Agent ids are proven (each one attested its own link); nothing else about them is shown.
 */
import { escapeHtml } from "./layout.ts";

/** Ancestors of the asking agent's token, nearest first. */
export type DelegationView = { agentId: string; clientId: string }[];

export function renderDelegationSection(chain: DelegationView | undefined): string {
  if (!chain || chain.length === 0) return "";
  const items = chain.map((l, i) => `<li>${i === 0 ? "delegated by" : "who was delegated by"} <code class="id">${escapeHtml(l.agentId)}</code></li>`).join("\n");
  return `<h2>On behalf of</h2>
<p>This agent did not get its access from you directly: another agent passed part of its own access on to it.</p>
<ol class="chain">
${items}
</ol>
<p class="hint">The last agent in this list is the one you gave access to. Denying stops only this request.</p>`;
}
