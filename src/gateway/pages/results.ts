/**
 * The pages a person sees after deciding: the agent code to hand over (when the agent gave no redirect URI),
 * the denial confirmation, and error pages that say what happened and what to do next.
 */
import { escapeHtml, renderPage } from "./layout.ts";
import { expiryHtml } from "./time.ts";

export interface CodeResultView {
  providerName: string;
  gatewayHost: string;
  /** What the person granted at the provider. */
  scopes: string[];
  code: string;
  sessionId: string;
  /** e.g. `ath token --code … --session …` */
  command: string;
  expiresAt: Date;
  now: Date;
}

export function renderCodeResultPage(v: CodeResultView): string {
  const body = `<h1 class="status-ok">Access approved</h1>
<p class="lead">You approved access to ${escapeHtml(v.providerName)}. Give the agent this code, or run the command where the agent runs.</p>
<h2>Access granted</h2>
<ul class="scopes">
${v.scopes.map((s) => `<li><span class="scope-name">${escapeHtml(s)}</span></li>`).join("\n") || '<li><span class="scope-desc">No scopes</span></li>'}
</ul>
<h2>Code</h2>
<pre>${escapeHtml(v.code)}</pre>
<h2>Session</h2>
<pre>${escapeHtml(v.sessionId)}</pre>
<h2>Command</h2>
<pre>${escapeHtml(v.command)}</pre>
<p class="expiry">The code works once and ${expiryHtml(v.expiresAt, v.now)}. Keep it private; you can close this tab afterwards.</p>
<p class="hint">To take this access back later: the agent's owner runs <code>ath revoke --provider …</code>, or the operator of
the gateway at <strong>${escapeHtml(v.gatewayHost)}</strong> revokes it in its admin console. Revoking at ${escapeHtml(v.providerName)} itself works too.</p>`;
  return renderPage({ title: "Access approved", body, brand: `ath gateway · ${v.gatewayHost}` });
}

/** After an ID-JAG's connection (DESIGN §23): nothing to hand over — the client asks again with a new assertion. */
export function renderConnectedPage(v: { providerName: string; gatewayHost: string; scopes: string[] }): string {
  const body = `<h1 class="status-ok">Connected</h1>
<p class="lead">You connected ${escapeHtml(v.providerName)}. Your organization's sign-in already decided which applications may use it; go back to the application and try again.</p>
<h2>Access granted</h2>
<ul class="scopes">
${v.scopes.map((s) => `<li><span class="scope-name">${escapeHtml(s)}</span></li>`).join("\n") || '<li><span class="scope-desc">No scopes</span></li>'}
</ul>
<p class="hint">To take this access back later, the operator of the gateway at <strong>${escapeHtml(v.gatewayHost)}</strong> revokes it in its admin console; revoking at ${escapeHtml(v.providerName)} itself works too. You can close this tab.</p>`;
  return renderPage({ title: "Connected", body, brand: `ath gateway · ${v.gatewayHost}` });
}

export function renderDeniedPage(v: { providerName: string }): string {
  const body = `<h1 class="status-bad">Access denied</h1>
<p class="lead">You denied the agent access to ${escapeHtml(v.providerName)}. Nothing was shared.</p>
<p>The agent will be told that you denied the request. You can close this tab.</p>`;
  return renderPage({ title: "Access denied", body });
}

export interface ErrorView {
  status: number;
  title: string;
  message: string;
  /** What the person can do next. */
  hint?: string;
  /** The ATH error code, shown small for support. */
  code?: string;
}

export function renderErrorPage(v: ErrorView): string {
  const body = `<h1 class="status-bad">${escapeHtml(v.title)}</h1>
<p>${escapeHtml(v.message)}</p>
${v.hint ? `<p class="hint">${escapeHtml(v.hint)}</p>` : ""}
<p class="error-code">HTTP ${escapeHtml(String(v.status))}${v.code ? ` · ${escapeHtml(v.code)}` : ""}</p>`;
  return renderPage({ title: v.title, body });
}
