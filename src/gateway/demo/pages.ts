/**
 * The sandbox provider's own page: a pretend sign-in and consent screen under a loud SANDBOX banner, so no
 * one mistakes it for a real provider's login.
 */
import { escapeHtml, renderPage } from "../pages/index.ts";
import { SCOPE_DESCRIPTIONS } from "./context.ts";

const BANNER = `<div class="sandbox" role="note">SANDBOX — the demo provider built into <code>ath serve --demo</code>. No real account, no password; notes live in memory until the gateway stops.</div>\n`;
const BRAND = "Demo Notes · sandbox provider";

export interface SignInView {
  actionUrl: string;
  requestId: string;
  csrf: string;
  scopes: string[];
  userName: string;
  /** Shown above the form when the last answer was refused. */
  problem?: string;
}

export function renderSignInPage(v: SignInView): string {
  const scopes = v.scopes
    .map((s) => {
      const d = SCOPE_DESCRIPTIONS[s];
      return `<li><span class="scope-name">${escapeHtml(s)}</span>${d ? `<span class="scope-desc">${escapeHtml(d)}</span>` : ""}</li>`;
    })
    .join("\n");
  const body = `<h1>Sign in to Demo Notes</h1>
<p class="lead">The ath gateway asks for access to your demo notes on behalf of an agent.</p>
${v.problem ? `<p class="notice">${escapeHtml(v.problem)}</p>` : ""}
<h2>Access requested</h2>
<ul class="scopes">
${scopes}
</ul>
<form method="post" action="${escapeHtml(v.actionUrl)}">
<input type="hidden" name="request" value="${escapeHtml(v.requestId)}">
<input type="hidden" name="csrf" value="${escapeHtml(v.csrf)}">
<label for="user">Demo user</label>
<input type="text" id="user" name="user" value="${escapeHtml(v.userName)}" maxlength="64" autocomplete="off">
<p class="hint">Any name works; each name has its own notes.</p>
<div class="actions">
<button type="submit" name="decision" value="cancel">Cancel</button>
<button type="submit" name="decision" value="allow" class="primary">Allow</button>
</div>
</form>`;
  return renderPage({ title: "Sign in to Demo Notes (sandbox)", body, banner: BANNER, brand: BRAND });
}

/** For requests that cannot be sent back to the client (RFC 6749 §4.1.2.1: bad client_id or redirect_uri). */
export function renderSignInError(title: string, message: string): string {
  const body = `<h1 class="status-bad">${escapeHtml(title)}</h1>
<p>${escapeHtml(message)}</p>
<p class="hint">Go back to the agent and start the authorization again.</p>`;
  return renderPage({ title, body, banner: BANNER, brand: BRAND });
}
