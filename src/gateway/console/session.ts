/**
 * Signing in to the admin console (DESIGN §9): the admin token is checked once, in constant time, and traded for a
 * server-side session — the browser's cookie holds a random session id (never the token), the store the id's hash;
 * 12 h, HttpOnly, SameSite=Strict, `__Host-ath_admin` over https (`ath_admin`, path /admin, over plain http). Every
 * form carries a CSRF token derived from the session id (the sign-in form's from a pre-session cookie). Sign-in
 * attempts are limited per client IP.
 */
import { AthError, PATHS } from "../../protocol/index.ts";
import { isAdminToken } from "../domain/admin-token.ts";
import type { Call, Gateway } from "../context.ts";
import { constantTimeEqual, hashSecret, randomSecret } from "../crypto/secrets.ts";
import { parseCookies } from "../rules/cookies.ts";

export const SESSION_TTL_SECONDS = 12 * 3600;
/** Sign-in attempts allowed per client IP in a window, and the window. */
export const SIGNIN_LIMIT = { attempts: 10, windowSeconds: 15 * 60 } as const;

export interface ConsoleUser {
  /** The session id (from the cookie): CSRF tokens are derived from it. */
  id: string;
  csrf: string;
}

/** The signed-in session of this request, or null. */
export async function currentSession(call: Call): Promise<ConsoleUser | null> {
  const id = readCookie(call.gw, call.req, "session");
  if (!id) return null;
  const s = await call.gw.store.getConsoleSession(idHash(id), call.gw.now());
  return s ? { id, csrf: csrfOf(id) } : null;
}

/** A POST's form, after its CSRF token was checked against the session's; else 403-ish STATE_MISMATCH. */
export function checkCsrf(user: ConsoleUser, form: URLSearchParams): void {
  if (!constantTimeEqual(form.get("csrf") ?? "", user.csrf)) {
    throw new AthError("STATE_MISMATCH", "The form expired or did not come from this console. Reload the page and try again.");
  }
}

/** The sign-in form's CSRF token and the pre-session cookie it is derived from (set when the browser has none). */
export function signinCsrf(gw: Gateway, req: Request): { csrf: string; setCookie: string | null } {
  const existing = readCookie(gw, req, "signin");
  const value = existing ?? randomSecret();
  return {
    csrf: hashSecret(`console-signin:${value}`),
    setCookie: existing ? null : cookieHeader(gw, "signin", value, 3600),
  };
}

/**
 * Checks a sign-in: the limit of the client's IP, the form's CSRF token, the admin token. Success creates a session
 * and returns its Set-Cookie; a wrong token throws UNAUTHORIZED (and is audited by the caller).
 */
export async function signIn(call: Call, form: URLSearchParams): Promise<string> {
  const { gw, req } = call;
  limiter(gw).take(call.peer ?? "in-process", gw.now());
  const pre = readCookie(gw, req, "signin");
  if (!pre || !constantTimeEqual(form.get("csrf") ?? "", hashSecret(`console-signin:${pre}`))) {
    throw new AthError("STATE_MISMATCH", "The sign-in form expired or did not come from this console. Reload it and try again.");
  }
  const token = form.get("token") ?? "";
  // hashes compared in constant time, exactly as the admin API's header check
  if (!isAdminToken(gw, token.trim())) {
    throw new AthError("UNAUTHORIZED", "That is not the admin token of this gateway.");
  }
  const id = randomSecret();
  const now = gw.now();
  await gw.store.createConsoleSession({ id_hash: idHash(id), created_at: now, expires_at: now + SESSION_TTL_SECONDS * 1000 });
  return cookieHeader(gw, "session", id, SESSION_TTL_SECONDS);
}

/** Ends the session; the Set-Cookie that clears it. */
export async function signOut(gw: Gateway, user: ConsoleUser): Promise<string> {
  await gw.store.deleteConsoleSession(idHash(user.id));
  return cookieHeader(gw, "session", "", 0);
}

// internal

function idHash(id: string): string {
  return hashSecret(`console-session:${id}`);
}

function csrfOf(id: string): string {
  return hashSecret(`console-csrf:${id}`);
}

type CookieKind = "session" | "signin";

/** Over https `__Host-` names (Secure, Path=/, no Domain); over plain http (loopback) the console's path only. */
function cookieName(gw: Gateway, kind: CookieKind): { name: string; attributes: string } {
  const base = kind === "session" ? "ath_admin" : "ath_admin_signin";
  return gw.opts.baseUrl.startsWith("https:")
    ? { name: `__Host-${base}`, attributes: "Path=/; Secure" }
    : { name: base, attributes: `Path=${PATHS.adminConsole}` };
}

function cookieHeader(gw: Gateway, kind: CookieKind, value: string, maxAge: number): string {
  const { name, attributes } = cookieName(gw, kind);
  return `${name}=${value}; ${attributes}; HttpOnly; SameSite=Strict; Max-Age=${maxAge}`;
}

function readCookie(gw: Gateway, req: Request, kind: CookieKind): string | null {
  const v = parseCookies(req.headers.get("cookie")).get(cookieName(gw, kind).name);
  return v && /^[A-Za-z0-9_-]{43}$/.test(v) ? v : null;
}

/** Attempts per client in a sliding window, in this process's memory (bounded: the oldest clients are dropped). */
class Limiter {
  private readonly seen = new Map<string, number[]>();
  take(client: string, now: number): void {
    const since = now - SIGNIN_LIMIT.windowSeconds * 1000;
    const recent = (this.seen.get(client) ?? []).filter((t) => t > since);
    if (recent.length >= SIGNIN_LIMIT.attempts) {
      const retry = Math.max(1, Math.ceil((recent[0]! + SIGNIN_LIMIT.windowSeconds * 1000 - now) / 1000));
      throw new AthError("RATE_LIMITED", "Too many sign-in attempts from this address. Wait and try again.", undefined, {
        headers: { "retry-after": String(retry) },
      });
    }
    recent.push(now);
    this.seen.delete(client);
    this.seen.set(client, recent);
    if (this.seen.size > 10_000) this.seen.delete(this.seen.keys().next().value!);
  }
}

const limiters = new WeakMap<Gateway, Limiter>();
function limiter(gw: Gateway): Limiter {
  let l = limiters.get(gw);
  if (!l) limiters.set(gw, (l = new Limiter()));
  return l;
}
