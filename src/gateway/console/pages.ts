/**
 * The admin console's pages (DESIGN §9), rendered on the server in the consent pages' shell (pages/layout.ts: its
 * stylesheet, CSP and headers): sign-in, overview, agents, tokens, providers, audit (one agent's page: agent-page.ts). No JavaScript; every value from
 * the store or the request is escaped here; every POST form carries the session's CSRF token; tables turn into one
 * card per row on a phone.
 */
import type { AdminAgent, AdminApproval, AdminMcpUrl, AdminToken } from "../../protocol/admin.ts";
import { PATHS } from "../../protocol/index.ts";
import { escapeHtml as e, renderPage } from "../pages/layout.ts";
import { renderRequestView, type RequestView } from "../pages/request-view.ts";

const ROOT = PATHS.adminConsole;
type Section = "overview" | "agents" | "approvals" | "tokens" | "providers" | "mcp" | "webhooks" | "audit";

export interface Shell {
  csrf: string;
  section: Section;
  flash?: string | null;
}

export function signinPage(o: { csrf: string; error?: string }): string {
  const error = o.error ? `<p class="notice" role="alert">${e(o.error)}</p>` : "";
  const body = `<h1>Admin console</h1>
<p class="lead">Sign in with this gateway's admin token.</p>
${error}<form method="post" action="${ROOT}/signin">
<input type="hidden" name="csrf" value="${e(o.csrf)}">
<label for="token">Admin token</label>
<input type="password" id="token" name="token" autocomplete="current-password" required>
<div class="actions"><button type="submit" class="primary">Sign in</button></div>
</form>
<p class="expiry">The token is checked once and not kept in this browser, which gets a session cookie for 12 hours.</p>`;
  return renderPage({ title: "Sign in — ath admin", body, brand: "ath gateway · admin" });
}

export function overviewPage(s: Shell, v: {
  agents: Record<string, number>;
  tokens: { active: number; revoked: number; expired: number };
  providers: number;
  recent: AuditRow[];
}): string {
  const count = (label: string, n: number, href: string) => `<a class="count" href="${e(href)}"><b>${n}</b>${e(label)}</a>`;
  const body = `<h1>Overview</h1>
<h2>Agents</h2>
<div class="counts">
${count("pending", v.agents.pending ?? 0, `${ROOT}/agents`)}
${count("approved", v.agents.approved ?? 0, `${ROOT}/agents`)}
${count("denied", v.agents.denied ?? 0, `${ROOT}/agents`)}
${count("suspended", v.agents.suspended ?? 0, `${ROOT}/agents`)}
</div>
<h2>Tokens</h2>
<div class="counts">
${count("active", v.tokens.active, `${ROOT}/tokens?state=active`)}
${count("revoked", v.tokens.revoked, `${ROOT}/tokens?state=revoked`)}
${count("expired", v.tokens.expired, `${ROOT}/tokens?state=expired`)}
${count("providers", v.providers, `${ROOT}/providers`)}
</div>
<h2>Latest events</h2>
${auditTable(v.recent)}
<p class="pager"><a href="${ROOT}/audit">All events</a></p>`;
  return page(s, "Overview", body);
}

/** An agent as the admin API shows it (protocol/admin.ts). */
export type AgentRow = Pick<AdminAgent, "client_id" | "agent_id" | "developer" | "purpose" | "agent_status" | "requested_providers" | "created_at" | "pending_providers">;

export function agentsPage(s: Shell, agents: AgentRow[]): string {
  const rows = agents.map((a) => {
    const action = (value: string, label: string, cls = "") =>
      `<button type="submit" name="action" value="${value}" class="small${cls}">${label}</button>`;
    const pending = a.pending_providers ?? [];
    const buttons = [
      a.agent_status !== "approved" ? action("approve", "Approve", " primary") : "",
      a.agent_status === "approved" && pending.length > 0 ? action("approve", "Approve additions", " primary") : "",
      a.agent_status === "pending" ? action("deny", "Deny", " danger") : "",
      a.agent_status === "approved" ? action("suspend", "Suspend", " danger") : "",
      action("remove", "Remove", " danger"),
    ].join("");
    return `<tr>
<td data-label="Status"><span class="badge ${e(a.agent_status)}">${e(a.agent_status)}</span>${pending.length ? `<br><span class="hint pending-additions">asks to add: ${pending.map((p) => `${e(p.provider_id)}: ${e(p.scopes.join(", "))}`).join("; ")}</span>` : ""}</td>
<td data-label="Agent"><span class="mono">${e(a.agent_id)}</span><br><span class="hint mono">${e(a.client_id)}</span></td>
<td data-label="Developer">${e(a.developer.name)} <span class="hint">(${e(a.developer.id)})</span></td>
<td data-label="Purpose">${a.purpose ? e(a.purpose) : '<span class="hint">none given</span>'}</td>
<td data-label="Requested">${requested(a)}</td>
<td data-label="Registered">${e(short(a.created_at))}</td>
<td data-label="Actions"><form method="post" action="${ROOT}/agents/${e(encodeURIComponent(a.client_id))}" class="row-actions">
${csrfField(s.csrf)}${buttons}</form><a class="agent-rules" href="${ROOT}/agents/${e(encodeURIComponent(a.client_id))}">Rules, policy, budgets</a></td>
</tr>`;
  });
  const body = `<h1>Agents</h1>
<p class="hint">Developer and purpose are claimed by the agent, not verified. Pending agents first. Deny, Suspend and Remove revoke the agent's tokens at once.</p>
${table(["Status", "Agent", "Developer", "Purpose", "Requested", "Registered", "Actions"], rows, "No agents have registered yet.")}`;
  return page(s, "Agents", body);
}

/** What the agent asked for at registration: each provider with its scopes, so an operator approves knowing it. */
function requested(a: AgentRow): string {
  if (a.requested_providers.length === 0) return '<span class="hint">nothing</span>';
  return a.requested_providers
    .map((p) => `<span class="mono">${e(p.provider_id)}</span>: ${p.scopes.map((sc) => `<span class="mono">${e(sc)}</span>`).join(", ")}`)
    .join("<br>");
}

/** A token as the admin API shows it (protocol/admin.ts). */
export type TokenRow = AdminToken;

/**
 * DESIGN §23: under a delegated token's agent, the agents it came through, nearest first (each with its token, which
 * the filters find), and the call budget it was handed — what an operator needs before revoking a branch or a root.
 */
export function delegatedBy(t: TokenRow): string {
  if (!t.delegation || t.delegation.chain.length === 0) return "";
  const links = t.delegation.chain
    .map((l) => `<li><span class="mono">${e(l.agent_id)}</span> <span class="hint">(token <span class="mono">${e(l.token_id)}</span>)</span></li>`)
    .join("");
  const share = t.delegation.budget === null ? "" : `<br><span class="hint">budget share: ${t.delegation.budget} calls</span>`;
  return `<div class="chain"><span class="hint">delegated by</span><ol>${links}</ol>${share}</div>`;
}

export function tokensPage(s: Shell, v: { filters: Record<string, string>; tokens: TokenRow[]; next: string | null; now: number }): string {
  const f = v.filters;
  const state = (t: TokenRow) => (t.revoked_at ? "revoked" : Date.parse(t.expires_at) <= v.now ? "expired" : "active");
  const revoke = (fields: Record<string, string>, label: string) =>
    `<form method="post" action="${ROOT}/tokens/revoke" class="row-actions">${csrfField(s.csrf)}${Object.entries(fields)
      .map(([k, val]) => `<input type="hidden" name="${e(k)}" value="${e(val)}">`)
      .join("")}<button type="submit" class="small danger">${e(label)}</button></form>`;
  const rows = v.tokens.map((t) => {
    const live = state(t) === "active";
    return `<tr>
<td data-label="Token"><span class="mono">${e(t.token_id)}</span></td>
<td data-label="State"><span class="badge ${state(t)}">${state(t)}</span></td>
<td data-label="Agent"><span class="mono">${e(t.agent_id)}</span>${delegatedBy(t)}</td>
<td data-label="User"><span class="mono">${e(t.user_id)}</span></td>
<td data-label="Provider">${e(t.provider_id)}</td>
<td data-label="Scopes"><span class="mono">${e(t.scopes.join(" "))}</span></td>
<td data-label="Expires">${e(short(t.expires_at))}</td>
<td data-label="Actions"><div class="row-actions">${live ? revoke({ token_id: t.token_id }, "Revoke") : ""}${revoke({ client_id: t.client_id }, "Revoke all of agent")}${revoke({ user_id: t.user_id }, "Revoke all of user")}</div></td>
</tr>`;
  });
  const body = `<h1>Tokens</h1>
<form method="get" action="${ROOT}/tokens" class="filters">
${input("agent_id", "Agent", f.agent_id)}${input("client_id", "Client id", f.client_id)}${input("user_id", "User", f.user_id)}${input("provider_id", "Provider", f.provider_id)}
<div><label for="state">State</label><select id="state" name="state">${["", "active", "revoked", "expired"]
    .map((o) => `<option value="${o}"${f.state === o ? " selected" : ""}>${o || "any"}</option>`)
    .join("")}</select></div>
<div><button type="submit" class="small">Filter</button></div>
</form>
${table(["Token", "State", "Agent", "User", "Provider", "Scopes", "Expires", "Actions"], rows, "No tokens match.")}
${pager(`${ROOT}/tokens`, f, v.next)}`;
  return page(s, "Tokens", body);
}

/** An approval as the admin API shows it (protocol/admin.ts), and for rows an admin may decide what will be sent. */
export interface ApprovalRow extends Pick<AdminApproval, "approval_id" | "agent_id" | "client_id" | "user_id" | "provider_id" | "approver" | "method" | "path" | "query" | "status" | "body_bytes" | "expires_at"> {
  /** The request as the approval page shows it (the bytes that will be sent), for rows an admin may decide. */
  request?: RequestView;
}

/** Requests waiting for a person (DESIGN §15): the ones whose approver is `admin` can be decided here. */
export function approvalsPage(s: Shell, v: { filters: Record<string, string>; approvals: ApprovalRow[]; next: string | null }): string {
  const f = v.filters;
  const rows = v.approvals.map((a) => {
    const decidable = a.approver === "admin" && a.status === "pending";
    const buttons = decidable
      ? `<form method="post" action="${ROOT}/approvals/${e(encodeURIComponent(a.approval_id))}" class="row-actions">${csrfField(s.csrf)}<button type="submit" name="action" value="deny" class="small danger">Deny</button><button type="submit" name="action" value="approve" class="small primary">Approve</button></form>`
      : a.approver === "user" && a.status === "pending"
        ? '<span class="hint">the user decides</span>'
        : "";
    const body = a.request === undefined ? "" : `<details open><summary>The request as it will be sent</summary>${renderRequestView(a.request)}</details>`;
    return `<tr>
<td data-label="Status"><span class="badge ${e(a.status)}">${e(a.status)}</span></td>
<td data-label="Request"><span class="mono">${e(a.method)} ${e(a.path)}${a.query ? `?${e(a.query)}` : ""}</span><br><span class="hint">${e(String(a.body_bytes))} bytes · ${e(a.approval_id)}</span>${body}</td>
<td data-label="Agent"><span class="mono">${e(a.agent_id)}</span></td>
<td data-label="User"><span class="mono">${e(a.user_id)}</span></td>
<td data-label="Provider">${e(a.provider_id)}</td>
<td data-label="Approver">${e(a.approver)}</td>
<td data-label="Expires">${e(short(a.expires_at))}</td>
<td data-label="Actions">${buttons}</td>
</tr>`;
  });
  const body = `<h1>Approvals</h1>
<p class="hint">Requests agents want to send that a person must approve one by one. Approve sends exactly the request shown, once; an admin decides those whose approver is admin, the user who granted the access decides the others.</p>
<form method="get" action="${ROOT}/approvals" class="filters">
<div><label for="status">Status</label><select id="status" name="status">${["pending", "approved", "denied", "expired", "used", ""]
    .map((o) => `<option value="${o}"${(f.status ?? "") === o ? " selected" : ""}>${o || "any"}</option>`)
    .join("")}</select></div>
<div><button type="submit" class="small">Filter</button></div>
</form>
${table(["Status", "Request", "Agent", "User", "Provider", "Approver", "Expires", "Actions"], rows, "No requests match.")}
${pager(`${ROOT}/approvals`, f, v.next)}`;
  return page(s, "Approvals", body);
}

export interface ProviderRow {
  provider_id: string;
  display_name: string;
  source: string;
  available_scopes: string[];
}

export function providersPage(s: Shell, providers: ProviderRow[]): string {
  const rows = providers.map(
    (p) => `<tr>
<td data-label="Provider"><span class="mono">${e(p.provider_id)}</span></td>
<td data-label="Name">${e(p.display_name)}</td>
<td data-label="Source">${e(p.source)}</td>
<td data-label="Scopes"><span class="mono">${e(p.available_scopes.join(" "))}</span></td>
<td data-label="Actions"><form method="post" action="${ROOT}/providers/${e(encodeURIComponent(p.provider_id))}/remove" class="row-actions">${csrfField(s.csrf)}<button type="submit" class="small danger">Remove</button></form></td>
</tr>`,
  );
  const body = `<h1>Providers</h1>
<p class="hint">Providers from the --providers file come back at the next start; add and change them with <code>ath admin providers</code>.</p>
${table(["Provider", "Name", "Source", "Scopes", "Actions"], rows, "No providers are configured.")}`;
  return page(s, "Providers", body);
}

export interface WebhookRow {
  webhook_id: string;
  url: string;
  events: string[];
  created_at: string;
}

/** Webhook subscriptions (DESIGN §20): list and Remove; adding one takes a secret, so it is `ath admin webhooks add`. */
export function webhooksPage(s: Shell, webhooks: WebhookRow[]): string {
  const rows = webhooks.map(
    (w) => `<tr>
<td data-label="Webhook"><span class="mono">${e(w.webhook_id)}</span></td>
<td data-label="URL"><span class="mono">${e(w.url)}</span></td>
<td data-label="Events"><span class="mono">${e(w.events.join(" "))}</span></td>
<td data-label="Created">${e(short(w.created_at))}</td>
<td data-label="Actions"><form method="post" action="${ROOT}/webhooks/${e(encodeURIComponent(w.webhook_id))}/remove" class="row-actions">${csrfField(s.csrf)}<button type="submit" class="small danger">Remove</button></form></td>
</tr>`,
  );
  const body = `<h1>Webhooks</h1>
<p class="hint">Signed POSTs of agent, token and approval events; add one with <code>ath admin webhooks add</code> (its secret is read from stdin).</p>
${table(["Webhook", "URL", "Events", "Created", "Actions"], rows, "No webhooks are subscribed.")}`;
  return page(s, "Webhooks", body);
}

export interface AuditRow {
  id: number;
  type: string;
  at: string;
  client_id: string | null;
  agent_id: string | null;
  user_id: string | null;
  provider_id: string | null;
  data: unknown;
}

export function auditPage(s: Shell, v: { filters: Record<string, string>; events: AuditRow[]; next: string | null }): string {
  const f = v.filters;
  const body = `<h1>Audit</h1>
<form method="get" action="${ROOT}/audit" class="filters">
${input("type", "Type", f.type)}${input("agent_id", "Agent", f.agent_id)}${input("client_id", "Client id", f.client_id)}${input("user_id", "User", f.user_id)}${input("provider_id", "Provider", f.provider_id)}${input("since", "Since (ISO 8601)", f.since)}${input("until", "Until (ISO 8601)", f.until)}
<div><button type="submit" class="small">Filter</button></div>
</form>
${auditTable(v.events)}
${pager(`${ROOT}/audit`, f, v.next)}`;
  return page(s, "Audit", body);
}

/** One MCP URL for many servers (DESIGN §22): each federated URL, its members, and who connected which. */
export function mcpPage(s: Shell, urls: AdminMcpUrl[]): string {
  const sections = urls.map((u) => {
    const members = u.members.map((m) => `<li>${e(m.display_name)} <span class="mono">${e(m.provider_id)}</span> — prefix <span class="mono">${e(m.prefix === "" ? '""' : m.prefix)}</span></li>`).join("");
    const rows = u.people.map(
      (p) => `<tr>
<td data-label="User"><span class="mono">${e(p.user_id)}</span></td>
<td data-label="Client"><span class="mono">${e(p.client_id)}</span></td>
<td data-label="Connected">${e(p.connected.join(", ") || "—")}</td>
<td data-label="Not connected">${e(p.missing.join(", ") || "—")}</td>
</tr>`,
    );
    return `<h2><span class="mono">${e(u.url)}</span>${u.group === null ? " (every MCP server)" : ` (group ${e(u.group)})`}</h2>
<ul>${members}</ul>
${table(["User", "Client", "Connected", "Not connected"], rows, "Nobody holds a token for this URL.")}`;
  });
  const body = `<h1>MCP URLs</h1>
<p class="hint">One URL in an MCP host for many servers: each person connects each member with their own sign-in. Groups are the providers file's <code>mcp_groups</code>.</p>
${sections.join("\n") || "<p>No MCP server is fronted here.</p>"}`;
  return page(s, "MCP URLs", body);
}

// shared by the console's pages (agent-page.ts)

export function page(s: Shell, title: string, body: string): string {
  const links: [Section, string, string][] = [
    ["overview", "Overview", ROOT],
    ["agents", "Agents", `${ROOT}/agents`],
    ["approvals", "Approvals", `${ROOT}/approvals`],
    ["tokens", "Tokens", `${ROOT}/tokens`],
    ["providers", "Providers", `${ROOT}/providers`],
    ["mcp", "MCP URLs", `${ROOT}/mcp`],
    ["webhooks", "Webhooks", `${ROOT}/webhooks`],
    ["audit", "Audit", `${ROOT}/audit`],
  ];
  const nav = `<nav class="console">${links
    .map(([id, label, href]) => `<a href="${href}"${id === s.section ? ' aria-current="page"' : ""}>${label}</a>`)
    .join("")}<form method="post" action="${ROOT}/signout">${csrfField(s.csrf)}<button type="submit" class="small">Sign out</button></form></nav>
${s.flash ? `<p class="flash" role="status">${e(s.flash)}</p>` : ""}`;
  return renderPage({ title: `${title} — ath admin`, body, nav, wide: true, brand: "ath gateway · admin" });
}

// internal

function auditTable(events: AuditRow[]): string {
  const rows = events.map(
    (ev) => `<tr>
<td data-label="Time">${e(short(ev.at))}</td>
<td data-label="Type"><span class="mono">${e(ev.type)}</span></td>
<td data-label="Agent"><span class="mono">${e(ev.agent_id ?? ev.client_id ?? "")}</span></td>
<td data-label="Provider">${e(ev.provider_id ?? "")}</td>
<td data-label="User"><span class="mono">${e(ev.user_id ?? "")}</span></td>
<td data-label="Data"><span class="mono">${ev.data === null ? "" : e(JSON.stringify(ev.data))}</span></td>
</tr>`,
  );
  return table(["Time", "Type", "Agent", "Provider", "User", "Data"], rows, "No events match.");
}

export function table(head: string[], rows: string[], empty: string): string {
  if (rows.length === 0) return `<p class="hint">${e(empty)}</p>`;
  return `<div class="table-wrap"><table class="list">
<thead><tr>${head.map((h) => `<th scope="col">${e(h)}</th>`).join("")}</tr></thead>
<tbody>
${rows.join("\n")}
</tbody></table></div>`;
}

function input(name: string, label: string, value: string | undefined): string {
  return `<div><label for="f-${name}">${e(label)}</label><input type="text" id="f-${name}" name="${name}" value="${e(value ?? "")}"></div>`;
}

function pager(path: string, filters: Record<string, string>, next: string | null): string {
  if (!next) return "";
  const q = new URLSearchParams({ ...filters, cursor: next });
  return `<p class="pager"><a href="${e(`${path}?${q}`)}">Older →</a></p>`;
}

export function csrfField(token: string): string {
  return `<input type="hidden" name="csrf" value="${e(token)}">`;
}

/** "2026-11-26 06:12 UTC" from an ISO time. */
export function short(iso: string): string {
  return `${iso.slice(0, 16).replace("T", " ")} UTC`;
}
