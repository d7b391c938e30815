/**
 * The `ath_user` cookie (DESIGN §15): after a person consents, the callback tells their browser who they are at the
 * provider, so the same browser can later approve that user's requests. The value is sealed (AES-GCM under the
 * gateway's master key: authenticated, so it cannot be forged or edited, and the user id is not readable), holds up
 * to 8 (provider, user) pairs — the last consents — and lives 30 days (inside the seal as well as in Max-Age).
 * HttpOnly, SameSite=Lax; `__Host-ath_user` under https, `ath_user` on path /ath/ over plain http.
 */
import type { Gateway } from "../context.ts";
import { parseCookies } from "../rules/cookies.ts";

export const USER_COOKIE_DAYS = 30;
const MAX_PAIRS = 8;
const AAD = "cookie:ath_user";

export interface ApproverIdentity {
  /** The cookie as the browser sent it: a secret (HttpOnly), the root of the approval form's CSRF token. */
  raw: string;
  users: { provider_id: string; user_id: string }[];
}

/** Who this browser proved to be at consent, or null (no cookie, a forged or foreign one, or expired). */
export async function readApprover(gw: Gateway, req: Request): Promise<ApproverIdentity | null> {
  const raw = parseCookies(req.headers.get("cookie")).get(cookie(gw).name);
  if (!raw || raw.length > 4096 || !/^v1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/.test(raw)) return null;
  try {
    const v = JSON.parse(await gw.sealer.open(raw, AAD)) as { exp: number; users: { p: string; u: string }[] };
    if (typeof v.exp !== "number" || v.exp <= gw.now() || !Array.isArray(v.users)) return null;
    return { raw, users: v.users.map((x) => ({ provider_id: String(x.p), user_id: String(x.u) })) };
  } catch {
    return null;
  }
}

/** The Set-Cookie that adds (provider, user) to this browser's cookie, after the person consented. */
export async function approverCookieAfterConsent(gw: Gateway, req: Request, providerId: string, userId: string): Promise<string> {
  const prior = (await readApprover(gw, req))?.users ?? [];
  const users = [{ provider_id: providerId, user_id: userId }, ...prior.filter((x) => x.provider_id !== providerId)].slice(0, MAX_PAIRS);
  const maxAge = USER_COOKIE_DAYS * 24 * 3600;
  const sealed = await gw.sealer.seal(JSON.stringify({ exp: gw.now() + maxAge * 1000, users: users.map((x) => ({ p: x.provider_id, u: x.user_id })) }), AAD);
  const { name, attributes } = cookie(gw);
  return `${name}=${sealed}; ${attributes}; HttpOnly; SameSite=Lax; Max-Age=${maxAge}`;
}

// internal

function cookie(gw: Gateway): { name: string; attributes: string } {
  return gw.opts.baseUrl.startsWith("https:")
    ? { name: "__Host-ath_user", attributes: "Path=/; Secure" }
    : { name: "ath_user", attributes: "Path=/ath/" };
}
