/**
 * HTTP plumbing of the sandbox provider: JSON and OAuth error responses (RFC 6749 §5.2), form bodies, client
 * authentication (RFC 6749 §2.3.1) and bearer tokens (RFC 6750).
 */
import { constantTimeEqual, hashSecret } from "../crypto/secrets.ts";
import type { DemoContext, TokenGrant } from "./context.ts";

const MAX_BODY_BYTES = 16 * 1024;

export function json(body: unknown, status = 200, headers: HeadersInit = {}): Response {
  const h = new Headers(headers);
  h.set("Content-Type", "application/json");
  h.set("Cache-Control", "no-store");
  return new Response(status === 204 ? null : JSON.stringify(body), { status, headers: h });
}

/** RFC 6749 §5.2 error body. */
export function oauthError(error: string, description: string, status = 400, headers: HeadersInit = {}): Response {
  return json({ error, error_description: description }, status, headers);
}

/** Reads a size-capped body as text; null when it is too large. */
export async function readBody(req: Request): Promise<string | null> {
  if (Number(req.headers.get("content-length") ?? 0) > MAX_BODY_BYTES) return null;
  const text = await req.text();
  return Buffer.byteLength(text) > MAX_BODY_BYTES ? null : text;
}

/**
 * An `application/x-www-form-urlencoded` body (RFC 6749 §4.1.3). RFC 6749 §3.1: parameters must not repeat.
 * Returns the params or the error response to send.
 */
export async function readForm(req: Request): Promise<URLSearchParams | Response> {
  const type = req.headers.get("content-type") ?? "";
  if (!type.toLowerCase().startsWith("application/x-www-form-urlencoded")) {
    return oauthError("invalid_request", "the body must be application/x-www-form-urlencoded");
  }
  const text = await readBody(req);
  if (text === null) return oauthError("invalid_request", "the body is too large", 413);
  const form = new URLSearchParams(text);
  for (const key of new Set(form.keys())) {
    if (form.getAll(key).length > 1) return oauthError("invalid_request", `parameter ${key} is repeated`);
  }
  return form;
}

/**
 * Client authentication: client_secret_basic or client_secret_post, exactly one of them (RFC 6749 §2.3.1).
 * Returns null when the client is the demo's client, else the 401 to send.
 */
export function authenticateClient(req: Request, form: URLSearchParams, ctx: DemoContext): Response | null {
  const header = req.headers.get("authorization");
  const basic = header && /^basic /i.test(header) ? parseBasic(header.slice(6).trim()) : null;
  if (header && !basic) return invalidClient(true);
  if (basic && (form.has("client_secret") || (form.has("client_id") && form.get("client_id") !== basic.id))) {
    return oauthError("invalid_request", "use one client authentication method");
  }
  const id = basic?.id ?? form.get("client_id") ?? "";
  const secret = basic?.secret ?? form.get("client_secret") ?? "";
  const ok = constantTimeEqual(id, ctx.clientId) && constantTimeEqual(secret, ctx.clientSecret);
  return ok ? null : invalidClient(Boolean(basic));
}

/** The grant behind a bearer token, or the RFC 6750 §3 challenge to send. */
export function authenticateBearer(req: Request, ctx: DemoContext): TokenGrant | Response {
  const header = req.headers.get("authorization") ?? "";
  const m = /^Bearer ([A-Za-z0-9\-._~+/]+=*)$/i.exec(header.trim());
  // RFC 6750 §3.1: a request with no credentials gets a challenge without an error code
  if (!header) return json({ error: "invalid_request", error_description: "a bearer token is required" }, 401, challenge());
  const grant = m?.[1] ? ctx.access.get(hashSecret(m[1])) : undefined;
  if (!grant) {
    const description = "the access token is invalid, expired or revoked";
    return json({ error: "invalid_token", error_description: description }, 401, challenge(`error="invalid_token", error_description="${description}"`));
  }
  return grant;
}

/** RFC 6750 §3.1 403 for a token lacking `scope`. */
export function insufficientScope(scope: string): Response {
  return json(
    { error: "insufficient_scope", error_description: `this request needs the ${scope} scope`, scope },
    403,
    challenge(`error="insufficient_scope", scope="${scope}"`),
  );
}

// internal

function challenge(params?: string): HeadersInit {
  return { "WWW-Authenticate": `Bearer realm="demo"${params ? `, ${params}` : ""}` };
}

function invalidClient(basic: boolean): Response {
  // RFC 6749 §5.2: 401 with a challenge matching the scheme the client tried
  return oauthError("invalid_client", "client authentication failed", 401, basic ? { "WWW-Authenticate": 'Basic realm="demo"' } : {});
}

/** RFC 6749 §2.3.1: id and secret are form-urlencoded before base64. */
function parseBasic(b64: string): { id: string; secret: string } | null {
  const decoded = Buffer.from(b64, "base64").toString("utf8");
  const i = decoded.indexOf(":");
  if (i < 0) return null;
  try {
    const dec = (s: string) => decodeURIComponent(s.replace(/\+/g, " "));
    return { id: dec(decoded.slice(0, i)), secret: dec(decoded.slice(i + 1)) };
  } catch {
    return null;
  }
}
