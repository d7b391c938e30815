/**
 * The shell of every HTML page the gateway serves: one inline stylesheet allowed by its CSP hash, the security
 * headers, HTML escaping, and `htmlResponse`. Pages carry no JavaScript and load nothing from elsewhere.
 */
import { forPage } from "../../text/sanitize.ts";
import { STYLESHEET } from "./style.ts";

/** CSP level 2 hash source of the one inline `<style>` element, computed once at load. */
export const STYLE_HASH = `'sha256-${new Bun.CryptoHasher("sha256").update(STYLESHEET).digest("base64")}'`;

/**
 * Builds the Content-Security-Policy. `form-action` defaults to `'self'`; Chromium enforces it on every
 * redirect that follows a form POST (checked: a 303 to another origin is blocked), so a page whose form ends in
 * a cross-origin redirect must list those origins (see `formActionSources`).
 */
export function contentSecurityPolicy(formAction: readonly string[] = ["'self'"]): string {
  return [
    "default-src 'none'",
    `style-src ${STYLE_HASH}`,
    "img-src 'none'",
    "base-uri 'none'",
    `form-action ${formAction.join(" ")}`,
    // no clickjacking of the Approve button; X-Frame-Options below for browsers without CSP 2
    "frame-ancestors 'none'",
  ].join("; ");
}

export const SECURITY_HEADERS: Record<string, string> = {
  "Content-Security-Policy": contentSecurityPolicy(),
  "X-Frame-Options": "DENY",
  // URLs on these pages carry codes and handles
  "Referrer-Policy": "no-referrer",
  "Cache-Control": "no-store",
  "X-Content-Type-Options": "nosniff",
  "Cross-Origin-Opener-Policy": "same-origin",
};

/**
 * `form-action` sources for a form whose POST is answered by redirects to `urls` (e.g. the provider's authorize
 * endpoint, then the agent's redirect URI): `'self'` plus each URL's origin; loopback origins become any port,
 * since RFC 8252 §7.3 lets a native client's redirect URI use any loopback port.
 */
export function formActionSources(urls: readonly (string | undefined | null)[]): string[] {
  const sources = new Set(["'self'"]);
  for (const raw of urls) {
    if (!raw || !URL.canParse(raw)) continue;
    const u = new URL(raw);
    if (u.protocol !== "http:" && u.protocol !== "https:") continue;
    // CSP host-source grammar has no IPv6 literals; [::1] cannot be listed
    if (u.hostname.startsWith("[")) continue;
    const loopback = u.hostname === "127.0.0.1" || u.hostname === "localhost";
    sources.add(loopback ? `${u.protocol}//${u.hostname}:*` : u.origin);
  }
  return [...sources];
}

export interface HtmlResponseInit {
  status?: number;
  headers?: HeadersInit;
  /** Replaces the default `form-action 'self'`; build it with `formActionSources`. */
  formAction?: readonly string[];
}

export function htmlResponse(html: string, init: HtmlResponseInit = {}): Response {
  const headers = new Headers(SECURITY_HEADERS);
  headers.set("Content-Type", "text/html; charset=utf-8");
  if (init.formAction) headers.set("Content-Security-Policy", contentSecurityPolicy(init.formAction));
  for (const [name, value] of new Headers(init.headers)) headers.set(name, value);
  return new Response(html, { status: init.status ?? 200, headers });
}

const ESCAPES: Record<string, string> = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

/**
 * Escapes text for element content and quoted attribute values — after making control, format and bidi characters
 * visible (`⟨U+202E⟩`, protocol/sanitize.ts): a page shows a registrant's or provider's words as data (DESIGN §14).
 */
export function escapeHtml(value: string): string {
  return forPage(String(value)).replace(/[&<>"']/g, (c) => ESCAPES[c] ?? c);
}

export interface PageShell {
  title: string;
  /** Already-escaped HTML of the card's content. */
  body: string;
  /** Already-escaped HTML shown above the card (e.g. the sandbox banner). */
  banner?: string;
  /** Small caption at the top of the card. */
  brand?: string;
  /** A wide card, for tables (the admin console). */
  wide?: boolean;
  /** Already-escaped HTML between the caption and the body (the admin console's navigation). */
  nav?: string;
}

/** The document around a page: viewport, the hashed stylesheet, one centered card. */
export function renderPage(p: PageShell): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<meta name="robots" content="noindex">
<title>${escapeHtml(p.title)}</title>
<style>${STYLESHEET}</style>
</head>
<body>
${p.banner ?? ""}<main class="card${p.wide ? " wide" : ""}">
<p class="brand">${escapeHtml(p.brand ?? "ath gateway")}</p>
${p.nav ?? ""}${p.body}
</main>
</body>
</html>
`;
}
