/**
 * Binding a consent session to the browser that decides it. The consent page sets an HttpOnly cookie (or reuses the
 * browser's existing one); the Approve/Deny POST records its hash on the session (first decider wins), and the
 * provider's callback must come back with the same cookie, so a code or link carried to another browser is useless.
 * Binding on the POST, not the GET, keeps link previewers (chat unfurlers, mail scanners) from locking the person out.
 * The same cookie seeds the per-browser pseudonym used as user_id when the provider names no user.
 */
import type { Gateway } from "../context.ts";
import { hashSecret, randomSecret } from "../crypto/secrets.ts";
import { parseCookies } from "../rules/cookies.ts";

/** RFC 6265bis caps cookie lifetimes at 400 days. */
const MAX_AGE_SECONDS = 400 * 24 * 3600;

export function readBinding(gw: Gateway, req: Request): string | null {
  const v = parseCookies(req.headers.get("cookie")).get(cookie(gw).name);
  return v && /^[A-Za-z0-9_-]{43}$/.test(v) ? v : null;
}

/** The browser's binding value, minting one when it has none; `setCookie` is non-null when it must be sent. */
export function ensureBinding(gw: Gateway, req: Request): { value: string; setCookie: string | null } {
  const existing = readBinding(gw, req);
  if (existing) return { value: existing, setCookie: null };
  const value = randomSecret();
  // SameSite=Lax: the provider's redirect back to /ath/callback is a top-level GET, which Lax cookies accompany.
  const { name, attributes } = cookie(gw);
  return { value, setCookie: `${name}=${value}; ${attributes}; HttpOnly; SameSite=Lax; Max-Age=${MAX_AGE_SECONDS}` };
}

export function bindingHash(value: string): string {
  return hashSecret(`binding:${value}`);
}

/** Double-submit CSRF token of the consent form, derived from the (HttpOnly, secret) binding cookie. */
export function csrfToken(handle: string, binding: string): string {
  return hashSecret(`csrf:${handle}:${binding}`);
}

/** A stable pseudonymous user id for this browser, for providers that do not identify the user. */
export function browserPseudonym(binding: string): string {
  return `browser:${hashSecret(`pseudonym:${binding}`).slice(0, 32)}`;
}

// internal

/**
 * Under https the cookie is `__Host-` (Secure, Path=/, no Domain), so no sibling subdomain or plain-http page can
 * plant a value it knows; over plain http (loopback development) that prefix is unavailable.
 */
function cookie(gw: Gateway): { name: string; attributes: string } {
  return gw.opts.baseUrl.startsWith("https:")
    ? { name: "__Host-ath_browser", attributes: "Path=/; Secure" }
    : { name: "ath_browser", attributes: "Path=/ath/" };
}
