/**
 * The gateway as an OAuth 2.0 client of a provider — one client for every provider: the authorization request URL,
 * the code exchange (RFC 6749 §4.1.3 + RFC 7636 code_verifier), refresh (§6), revocation (RFC 7009) and the user's id.
 *
 * Providers differ from the RFCs in a few known places (DESIGN §11). Each is a *named quirk point* below — a small
 * function that reads the provider's configuration — so a template can say "GitHub answers form-encoded" without a
 * per-provider branch anywhere else. The client is given what it needs (the provider with its secret open, `fetch`,
 * a timeout); it never touches the store.
 */
import { decodeJwt } from "jose";
import { z } from "zod";
import { AthError, type ProviderConfig } from "../../protocol/index.ts";
import type { Fetch } from "../context.ts";

/** A provider with its client secret in the clear — held only for the duration of one call. */
export interface OAuthProvider {
  provider_id: string;
  config: ProviderConfig;
}

/** Outbound settings of one call: the fetch to use and how long to wait. */
export interface Outbound {
  fetch: Fetch;
  timeoutMs: number;
}

export const UpstreamTokenResponse = z.object({
  access_token: z.string().min(1),
  token_type: z.string().optional(),
  expires_in: z.coerce.number().optional(),
  refresh_token: z.string().min(1).optional(),
  scope: z.string().optional(),
  id_token: z.string().optional(),
});
export type UpstreamTokenResponse = z.infer<typeof UpstreamTokenResponse>;

/** Thrown when the provider refused a grant (`invalid_grant`): the grant is dead, retrying will not help. */
export class GrantRefusedError extends Error {
  override readonly name = "GrantRefusedError";
}

/** The provider's authorize URL for one session (DESIGN §3 Phase B step 2). */
export function authorizeUrl(
  p: OAuthProvider,
  o: { redirectUri: string; scopes: string[]; state: string; codeChallenge: string; resource: string | null },
): string {
  const url = new URL(p.config.authorize_endpoint);
  // Without the gateway's consent page, the provider must ask the person: it remembers consent per OAuth client, and
  // every agent shares the gateway's client (OIDC Core §3.1.2.1 prompt=consent; extra_authorize_params may override).
  if (p.config.consent_screen === false) url.searchParams.set("prompt", "consent");
  for (const [k, v] of Object.entries(extraAuthorizeParams(p))) url.searchParams.set(k, v);
  url.searchParams.set("response_type", "code");
  url.searchParams.set("client_id", p.config.client_id);
  url.searchParams.set("redirect_uri", o.redirectUri);
  url.searchParams.set(scopeParameter(p), joinScopes(p, o.scopes));
  url.searchParams.set("state", o.state);
  url.searchParams.set("code_challenge", o.codeChallenge);
  url.searchParams.set("code_challenge_method", "S256");
  if (o.resource) url.searchParams.set("resource", o.resource);
  return url.href;
}

export async function exchangeCode(
  p: OAuthProvider,
  o: { code: string; verifier: string; redirectUri: string; resource: string | null },
  out: Outbound,
): Promise<UpstreamTokenResponse> {
  const form: Record<string, string> = {
    grant_type: "authorization_code",
    code: o.code,
    redirect_uri: o.redirectUri,
    code_verifier: o.verifier,
  };
  if (o.resource) form.resource = o.resource;
  return tokenRequest(p, form, out);
}

export async function refreshGrant(p: OAuthProvider, refreshToken: string, out: Outbound): Promise<UpstreamTokenResponse> {
  return tokenRequest(p, { grant_type: "refresh_token", refresh_token: refreshToken }, out);
}

/** RFC 7009. Resolves to the HTTP status; network failures reject. */
export async function revokeUpstream(p: OAuthProvider, token: string, hint: "access_token" | "refresh_token", out: Outbound): Promise<number> {
  if (!p.config.revocation_endpoint) throw new TypeError("provider has no revocation_endpoint");
  const { headers, body } = encodeTokenRequest(p, clientAuthentication(p, { token, token_type_hint: hint }));
  const res = await out.fetch(p.config.revocation_endpoint, { method: "POST", headers, body, signal: AbortSignal.timeout(out.timeoutMs), redirect: "manual" });
  await res.body?.cancel();
  return res.status;
}

/**
 * Quirk point — the user id: the OIDC id_token `sub` (received straight from the token endpoint over the back
 * channel, so OIDC Core §3.1.3.7 lets TLS stand in for the signature check), else the userinfo endpoint's
 * `sub` / `id` / `login`, else null (the gateway then uses a per-browser pseudonym).
 */
export async function upstreamUserId(p: OAuthProvider, t: UpstreamTokenResponse, out: Outbound): Promise<string | null> {
  if (t.id_token) {
    try {
      const claims = decodeJwt(t.id_token);
      const aud = Array.isArray(claims.aud) ? claims.aud : [claims.aud];
      if (typeof claims.sub === "string" && claims.sub && aud.includes(p.config.client_id)) return claims.sub;
    } catch {
      // not a JWT: fall through to userinfo
    }
  }
  if (!p.config.userinfo_endpoint) return null;
  try {
    const res = await out.fetch(p.config.userinfo_endpoint, {
      headers: { authorization: `Bearer ${t.access_token}`, accept: "application/json" },
      signal: AbortSignal.timeout(out.timeoutMs),
    });
    if (!res.ok) return null;
    const info = (await res.json()) as Record<string, unknown>;
    const id = info.sub ?? info.id ?? info.login;
    return typeof id === "string" || typeof id === "number" ? String(id) : null;
  } catch {
    return null;
  }
}

// internal — the quirk points and the one token request

/** Quirk point — extra authorize parameters (e.g. Google's `access_type=offline`). */
function extraAuthorizeParams(p: OAuthProvider): Record<string, string> {
  return p.config.extra_authorize_params ?? {};
}

/** Quirk point — the authorize parameter that carries the scopes (RFC 6749 §3.3: `scope`). */
function scopeParameter(_p: OAuthProvider): string {
  return "scope";
}

/** Quirk point — how scopes are joined (RFC 6749 §3.3: space-delimited). */
function joinScopes(_p: OAuthProvider, scopes: readonly string[]): string {
  return scopes.join(" ");
}

/** Quirk point — client authentication at the token and revocation endpoints (RFC 6749 §2.3.1). */
function clientAuthentication(p: OAuthProvider, form: Record<string, string>): { form: Record<string, string>; headers: Record<string, string> } {
  if (p.config.token_endpoint_auth_method === "client_secret_basic") {
    // RFC 6749 §2.3.1: id and secret are form-urlencoded before base64.
    const id = encodeURIComponent(p.config.client_id);
    const secret = encodeURIComponent(p.config.client_secret);
    return { form, headers: { authorization: `Basic ${Buffer.from(`${id}:${secret}`).toString("base64")}` } };
  }
  return { form: { ...form, client_id: p.config.client_id, client_secret: p.config.client_secret }, headers: {} };
}

/** Quirk point — the token request's body format and Accept header (RFC 6749 §4.1.3: form-encoded, JSON back). */
function encodeTokenRequest(
  _p: OAuthProvider,
  r: { form: Record<string, string>; headers: Record<string, string> },
): { headers: Record<string, string>; body: string } {
  return {
    headers: { "content-type": "application/x-www-form-urlencoded", accept: "application/json", ...r.headers },
    body: new URLSearchParams(r.form).toString(),
  };
}

/** Quirk point — reading the token endpoint's answer (RFC 6749 §5.1: a JSON object) into its fields. */
function parseTokenResponse(_p: OAuthProvider, text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return null; // reported by the caller as a malformed response
  }
}

async function tokenRequest(p: OAuthProvider, form: Record<string, string>, out: Outbound): Promise<UpstreamTokenResponse> {
  const { headers, body } = encodeTokenRequest(p, clientAuthentication(p, form));
  let res: Response;
  let text: string;
  try {
    res = await out.fetch(p.config.token_endpoint, { method: "POST", headers, body, signal: AbortSignal.timeout(out.timeoutMs), redirect: "manual" });
    text = await res.text();
  } catch (cause) {
    throw new AthError("OAUTH_ERROR", `The token endpoint of '${p.provider_id}' could not be reached`, { provider_id: p.provider_id }, { cause });
  }
  const payload = parseTokenResponse(p, text);
  if (!res.ok) {
    const error = typeof payload === "object" && payload && "error" in payload ? String((payload as { error: unknown }).error) : `http_${res.status}`;
    if (error === "invalid_grant") throw new GrantRefusedError(`provider '${p.provider_id}' refused the grant`);
    throw new AthError("OAUTH_ERROR", `The provider '${p.provider_id}' rejected the token request: ${error}`, {
      provider_id: p.provider_id,
      upstream_error: error,
      upstream_status: res.status,
    });
  }
  const parsed = UpstreamTokenResponse.safeParse(payload);
  if (!parsed.success) {
    throw new AthError("OAUTH_ERROR", `The provider '${p.provider_id}' returned a malformed token response`, { provider_id: p.provider_id });
  }
  return parsed.data;
}
