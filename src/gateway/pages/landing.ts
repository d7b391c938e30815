/** The landing page at `/`: what this is, and where an agent, a person and an operator go from here. */
import { escapeHtml, renderPage } from "./layout.ts";

export interface LandingView {
  host: string;
  baseUrl: string;
  version: string;
  /** Native mode: the one app this gateway fronts. */
  appId: string | null;
  providers: { id: string; displayName: string }[];
}

export function renderLandingPage(v: LandingView): string {
  const providers = v.providers.map((p) => `<li><span class="scope-name">${escapeHtml(p.id)}</span><span class="scope-desc">${escapeHtml(p.displayName)}</span></li>`).join("\n");
  const what = v.appId
    ? `This is the ATH endpoint of the app <strong>${escapeHtml(v.appId)}</strong>: agents reach its API on a person's behalf, after the person approves, without ever holding the person's password or token.`
    : "This is an ATH gateway: software agents call OAuth-protected APIs through it on people's behalf, after each person approves in their browser — without ever holding their passwords or the providers' tokens.";
  const body = `<h1>ath gateway at ${escapeHtml(v.host)}</h1>
<p class="lead">${what}</p>
<h2>${v.appId ? "The app" : "Providers"}</h2>
<ul class="scopes">
${providers || '<li><span class="scope-desc">None configured yet</span></li>'}
</ul>
<h2>For agents</h2>
<p>Discovery: <a href="/.well-known/ath.json">/.well-known/ath.json</a>${v.appId ? ` · <a href="/.well-known/ath-app.json">/.well-known/ath-app.json</a>` : ""}. With the CLI: <code>${v.appId ? `ath discover -m native -s ${escapeHtml(v.baseUrl)}` : `ath discover -g ${escapeHtml(v.baseUrl)}`}</code>.</p>
<h2>For operators</h2>
<p>Health: <a href="/health">/health</a> · console: <a href="/admin/">/admin/</a></p>
<p class="hint">ath ${escapeHtml(v.version)} · the ATH protocol: github.com/ath-protocol/agent-trust-handshake-protocol</p>`;
  return renderPage({ title: `ath gateway — ${v.host}`, body, brand: `ath gateway · ${v.host}` });
}
