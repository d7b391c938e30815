/**
 * One agent's page in the admin console (DESIGN §9, §15–§17): who it is, what it may do — per provider the scopes
 * approved, denied and waiting for the admin (approvable here) — its live tokens, and its own approval rules, policy
 * rules and budgets, each edited as JSON in a form of its own (an empty list clears it; a refused form shows its error
 * and the text as sent). Readable on a phone: its tables become one card per row (issue 40: it overflowed at 390 px
 * and showed neither scopes nor tokens).
 */
import type { AdminAgent, AdminToken } from "../../protocol/admin.ts";
import { PATHS } from "../../protocol/index.ts";
import { escapeHtml as e } from "../pages/layout.ts";
import { csrfField, delegatedBy, page, short, table, type Shell } from "./pages.ts";

const ROOT = PATHS.adminConsole;

/** A form of the agent page that was refused: which list, why, and the text as it was sent. */
export interface ListError {
  list: "approval_rules" | "policy" | "budgets";
  message: string;
  source: string;
}

export function agentPage(s: Shell, a: AdminAgent, tokens: AdminToken[], error?: ListError): string {
  const action = `${ROOT}/agents/${encodeURIComponent(a.client_id)}`;
  const body = `<h1>Agent</h1>
<p><span class="badge ${e(a.agent_status)}">${e(a.agent_status)}</span></p>
<code class="id">${e(a.agent_id)}</code><code class="id hint">${e(a.client_id)}</code>
<p>${e(a.developer.name)} <span class="hint">(${e(a.developer.id)})</span> — ${a.purpose ? e(a.purpose) : '<span class="hint">no purpose given</span>'}</p>
${statusForm(s, a, action)}
${accessSection(a)}
${tokensSection(a, tokens)}
<p class="hint">This agent's own rules, added to those of its providers. An empty list (<code>[]</code>) clears one. <a href="${ROOT}/agents">All agents</a></p>
${listSection(s, action, error, "approval_rules", "Approval rules", "Requests a person approves one by one, for example:", '[{"match": ["POST /v1/send"], "approver": "admin"}]', a.approval_rules)}
${listSection(s, action, error, "policy", "Policy rules", "Allow, deny or ask, with an optional CEL condition over the request, for example:", '[{"match": ["POST /v1/**"], "when": "request.body.amount > 100", "action": "deny", "reason": "too much"}]', a.policy)}
${listSection(s, action, error, "budgets", "Budgets", "At most limit matching calls per window (1h, 1d, 30d), for example:", '[{"match": ["GET /v1/**"], "limit": 100, "window": "1d"}]', a.budgets)}`;
  return page(s, "Agent", body);
}

// internal

/** The status actions of the agents list, here too: approving a pending agent or its additions is why one comes here. */
function statusForm(s: Shell, a: AdminAgent, action: string): string {
  const button = (value: string, label: string, cls = "") => `<button type="submit" name="action" value="${value}" class="small${cls}">${label}</button>`;
  const buttons = [
    a.agent_status !== "approved" ? button("approve", "Approve", " primary") : "",
    a.agent_status === "approved" && a.pending_providers.length > 0 ? button("approve", "Approve additions", " primary") : "",
    a.agent_status === "pending" ? button("deny", "Deny", " danger") : "",
    a.agent_status === "approved" ? button("suspend", "Suspend", " danger") : "",
  ].join("");
  return buttons ? `<form method="post" action="${e(action)}" class="row-actions">${csrfField(s.csrf)}${buttons}</form>` : "";
}

/** Per provider: approved, denied, and waiting for the admin (asked for since, DESIGN §17). */
function accessSection(a: AdminAgent): string {
  const ids = [...new Set([...a.approved_providers.map((p) => p.provider_id), ...a.pending_providers.map((p) => p.provider_id)])];
  const scopes = (list: string[]) => (list.length ? list.map((sc) => `<span class="mono">${e(sc)}</span>`).join(", ") : '<span class="hint">none</span>');
  const rows = ids.map((id) => {
    const approved = a.approved_providers.find((p) => p.provider_id === id);
    const waiting = a.pending_providers.find((p) => p.provider_id === id)?.scopes ?? [];
    const denial = approved?.denial_reason ? ` <span class="hint">(${e(approved.denial_reason)})</span>` : "";
    return `<tr>
<td data-label="Provider">${e(id)}</td>
<td data-label="Approved">${scopes(approved?.approved_scopes ?? [])}</td>
<td data-label="Pending">${waiting.length ? `<span class="pending-scopes">${scopes(waiting)}</span>` : '<span class="hint">none</span>'}</td>
<td data-label="Denied">${scopes(approved?.denied_scopes ?? [])}${denial}</td>
</tr>`;
  });
  return `<section id="access">
<h2>Access</h2>
<p class="hint">Approved until ${e(short(a.approval_expires))}. A person still consents to each scope before a token holds it.</p>
${table(["Provider", "Approved", "Pending your approval", "Denied"], rows, "No provider asked for.")}
</section>`;
}

/** Its live tokens (the first page of them), each with the scopes it holds; the tokens page has all and revokes. */
function tokensSection(a: AdminAgent, tokens: AdminToken[]): string {
  const rows = tokens.map(
    (t) => `<tr>
<td data-label="Token"><span class="mono">${e(t.token_id)}</span>${delegatedBy(t)}</td>
<td data-label="Provider">${e(t.provider_id)}</td>
<td data-label="Scopes"><span class="mono">${e(t.scopes.join(" "))}</span></td>
<td data-label="User"><span class="mono">${e(t.user_id)}</span></td>
<td data-label="Expires">${e(short(t.expires_at))}</td>
</tr>`,
  );
  const all = `${ROOT}/tokens?${new URLSearchParams({ client_id: a.client_id })}`;
  return `<section id="tokens">
<h2>Live tokens</h2>
${table(["Token", "Provider", "Scopes", "User", "Expires"], rows, "No live token.")}
<p class="pager"><a href="${e(all)}">All of its tokens (revoke there)</a></p>
</section>`;
}

function listSection(s: Shell, action: string, error: ListError | undefined, list: ListError["list"], title: string, hint: string, example: string, value: unknown[]): string {
  const failed = error?.list === list ? error : undefined;
  const text = failed ? failed.source : value.length ? JSON.stringify(value, null, 2) : "[]";
  return `<section id="${list}">
<h2>${e(title)}</h2>
<p class="hint">${hint}</p>
<code class="block">${e(example)}</code>
${failed ? `<p class="notice" role="alert">${e(failed.message)}</p>` : ""}<form method="post" action="${e(`${action}/${list}`)}">
${csrfField(s.csrf)}<label for="json-${list}">${e(title)} (JSON)</label>
<textarea id="json-${list}" name="json" rows="${Math.min(24, Math.max(4, text.split("\n").length + 1))}" spellcheck="false">${e(text)}</textarea>
<div class="actions"><button type="submit" class="primary">Save ${e(title.toLowerCase())}</button></div>
</form>
</section>`;
}
