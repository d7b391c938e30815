/**
 * Binding a consent session to the browser that opened it. The first GET of the consent page sets an HttpOnly
 * cookie (or reuses the browser's existing one) and records its hash on the session; the consent POST and the
 * provider's callback must come back with the same cookie, so a code or link carried to another browser is useless.
 * The same cookie seeds the per-browser pseudonym used as user_id when the provider names no user.
 */
import type { Gateway } from "./context.ts";
import { readCookies } from "./http.ts";
import { hashSecret, randomSecret } from "./secrets.ts";

const COOKIE = "ath_browser";
/** RFC 6265bis caps cookie lifetimes at 400 days. */
const MAX_AGE_SECONDS = 400 * 24 * 3600;

export function readBinding(req: Request): string | null {
  const v = readCookies(req).get(COOKIE);
  return v && /^[A-Za-z0-9_-]{43}$/.test(v) ? v : null;
}

/** The browser's binding value, minting one when it has none; `setCookie` is non-null when it must be sent. */
export function ensureBinding(gw: Gateway, req: Request): { value: string; setCookie: string | null } {
  const existing = readBinding(req);
  if (existing) return { value: existing, setCookie: null };
  const value = randomSecret();
  // SameSite=Lax: the provider's redirect back to /ath/callback is a top-level GET, which Lax cookies accompany.
  const secure = gw.opts.baseUrl.startsWith("https:") ? "; Secure" : "";
  return { value, setCookie: `${COOKIE}=${value}; Path=/ath/; HttpOnly; SameSite=Lax; Max-Age=${MAX_AGE_SECONDS}${secure}` };
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
