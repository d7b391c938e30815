/**
 * GET/POST /demo/oauth/authorize: the authorization endpoint of RFC 6749 §4.1.1, with PKCE S256 required
 * (RFC 7636; OAuth 2.1 §4.1.1). GET validates the request and shows the sign-in page; POST answers it with a
 * redirect carrying a code or `error=access_denied`.
 */
import { formActionSources, htmlResponse } from "../pages/index.ts";
import { constantTimeEqual, hashSecret, mintSecret, randomSecret } from "../crypto/secrets.ts";
import { DEMO_SCOPES, TTL, type DemoContext } from "./context.ts";
import { readBody } from "./http.ts";
import { renderSignInError, renderSignInPage } from "./pages.ts";

const BROWSER_COOKIE = "demo_browser";
const DEFAULT_USER = "Demo User";

export function authorizeGet(req: Request, ctx: DemoContext): Response {
  const url = new URL(req.url);
  const q = url.searchParams;
  // RFC 6749 §4.1.2.1: with a bad client_id or redirect_uri, tell the user, never redirect
  if (!constantTimeEqual(q.get("client_id") ?? "", ctx.clientId)) {
    return page(renderSignInError("Unknown client", "This sign-in link names a client the sandbox does not know."), 400);
  }
  const redirectUri = q.get("redirect_uri");
  if (redirectUri !== ctx.callbackUrl) {
    return page(renderSignInError("Wrong redirect URI", `The sandbox only redirects to ${ctx.callbackUrl}.`), 400);
  }
  const state = q.get("state");
  const fail = (error: string, description: string) => redirect(redirectUri, { error, error_description: description, state });
  if (q.get("response_type") !== "code") return fail("unsupported_response_type", "response_type must be code");
  const challenge = q.get("code_challenge") ?? "";
  if (q.get("code_challenge_method") !== "S256") return fail("invalid_request", "PKCE with code_challenge_method=S256 is required");
  // RFC 7636 §4.2: BASE64URL(SHA256(verifier)) is 43 characters
  if (!/^[A-Za-z0-9_-]{43}$/.test(challenge)) return fail("invalid_request", "code_challenge must be a base64url SHA-256");
  const scopes = [...new Set((q.get("scope") ?? "").split(" ").filter(Boolean))];
  const unknown = scopes.filter((s) => !(DEMO_SCOPES as readonly string[]).includes(s));
  if (scopes.length === 0 || unknown.length) return fail("invalid_scope", `scope must be among ${DEMO_SCOPES.join(", ")}`);

  const browser = readCookie(req, BROWSER_COOKIE) ?? randomSecret(16);
  const requestId = randomSecret(16);
  const csrf = randomSecret(16);
  ctx.pending.set(requestId, { redirectUri, scopes, state, challenge, csrf, browser }, TTL.pendingMs);
  const html = renderSignInPage({ actionUrl: url.pathname, requestId, csrf, scopes, userName: DEFAULT_USER });
  return page(html, 200, ctx, browser);
}

export async function authorizePost(req: Request, ctx: DemoContext): Promise<Response> {
  const text = await readBody(req);
  const form = new URLSearchParams(text ?? "");
  const requestId = form.get("request") ?? "";
  const pending = ctx.pending.get(requestId);
  if (!pending) {
    return page(renderSignInError("This sign-in has expired", "It was already answered, or it is more than 10 minutes old."), 400);
  }
  // CSRF: the hidden token and the browser cookie must both match what the page was shown with
  const browser = readCookie(req, BROWSER_COOKIE) ?? "";
  if (!constantTimeEqual(form.get("csrf") ?? "", pending.csrf) || !constantTimeEqual(browser, pending.browser)) {
    return page(renderSignInError("Request refused", "This answer did not come from the page the sandbox showed to this browser."), 403);
  }
  const decision = form.get("decision");
  if (decision === "cancel") {
    ctx.pending.delete(requestId);
    return redirect(pending.redirectUri, { error: "access_denied", error_description: "the user cancelled", state: pending.state });
  }
  const name = (form.get("user") ?? "").trim();
  const sub = slug(name);
  if (decision !== "allow" || !sub || name.length > 64) {
    const problem = decision !== "allow" ? "Choose Allow or Cancel." : "Enter a name of 1 to 64 characters, with at least one letter or digit.";
    const html = renderSignInPage({ actionUrl: new URL(req.url).pathname, requestId, csrf: pending.csrf, scopes: pending.scopes, userName: name, problem });
    return page(html, 400, ctx);
  }
  if (!ctx.pending.take(requestId)) return page(renderSignInError("This sign-in has expired", "It was already answered."), 400);
  const code = mintSecret("demo_code_");
  ctx.codes.set(
    hashSecret(code),
    { redirectUri: pending.redirectUri, scopes: pending.scopes, challenge: pending.challenge, sub, name, grantId: randomSecret(12), used: false },
    TTL.codeMs,
  );
  return redirect(pending.redirectUri, { code, state: pending.state });
}

/** "Ada Lovelace" → "ada-lovelace": the demo user's stable `sub`. */
export function slug(name: string): string {
  return name
    .normalize("NFKD")
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, 64);
}

// internal

function redirect(to: string, params: Record<string, string | null>): Response {
  const url = new URL(to);
  for (const [k, v] of Object.entries(params)) if (v !== null) url.searchParams.set(k, v);
  // 303: the browser follows a POST's answer with a GET; no-referrer: the URL carries the code
  return new Response(null, { status: 303, headers: { Location: url.href, "Cache-Control": "no-store", "Referrer-Policy": "no-referrer" } });
}

/**
 * Chromium enforces form-action on each redirect after a POST: Allow leads to the gateway's callback and on to
 * the agent's redirect URI (loopback on any port, or an https app).
 */
function page(html: string, status: number, ctx?: DemoContext, browser?: string): Response {
  const formAction = ctx ? [...formActionSources([ctx.callbackUrl, "http://127.0.0.1/", "http://localhost/"]), "https:"] : undefined;
  const headers = new Headers();
  if (ctx && browser) {
    const secure = ctx.secureCookies ? "; Secure" : "";
    headers.set("Set-Cookie", `${BROWSER_COOKIE}=${browser}; Path=${new URL(ctx.issuer).pathname}/oauth; HttpOnly; SameSite=Lax; Max-Age=3600${secure}`);
  }
  return htmlResponse(html, { status, headers, formAction });
}

function readCookie(req: Request, name: string): string | null {
  for (const part of (req.headers.get("cookie") ?? "").split(";")) {
    const [k, ...v] = part.trim().split("=");
    if (k === name) return v.join("=") || null;
  }
  return null;
}
