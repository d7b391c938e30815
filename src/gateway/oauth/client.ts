/**
 * The gateway as an OAuth 2.0 client of a provider: the authorization request URL, the code exchange
 * (RFC 6749 §4.1.3 + RFC 7636 code_verifier), refresh (§6) and token revocation (RFC 7009). Form-encoded,
 * client authentication per the provider's `token_endpoint_auth_method`.
 */
import { decodeJwt } from "jose";
import { z } from "zod";
import { AthError } from "../../protocol/index.ts";
import type { OpenProvider } from "../domain/providers.ts";

export const UpstreamTokenResponse = z.object({
  access_token: z.string().min(1),
  token_type: z.string().optional(),
  expires_in: z.coerce.number().optional(),
  refresh_token: z.string().min(1).optional(),
  scope: z.string().optional(),
  id_token: z.string().optional(),
});
export type UpstreamTokenResponse = z.infer<typeof UpstreamTokenResponse>;

/** The provider's authorize URL for one session (DESIGN §3 Phase B step 2). */
export function authorizeUrl(
  p: OpenProvider,
  o: { redirectUri: string; scopes: string[]; state: string; codeChallenge: string; resource: string | null },
): string {
  const url = new URL(p.config.authorize_endpoint);
  // Without the gateway's consent page, the provider must ask the person: it remembers consent per OAuth client, and
  // every agent shares the gateway's client (OIDC Core §3.1.2.1 prompt=consent; extra_authorize_params may override).
  if (p.config.consent_screen === false) url.searchParams.set("prompt", "consent");
  for (const [k, v] of Object.entries(p.config.extra_authorize_params ?? {})) url.searchParams.set(k, v);
  url.searchParams.set("response_type", "code");
  url.searchParams.set("client_id", p.config.client_id);
  url.searchParams.set("redirect_uri", o.redirectUri);
  url.searchParams.set("scope", o.scopes.join(" "));
  url.searchParams.set("state", o.state);
  url.searchParams.set("code_challenge", o.codeChallenge);
  url.searchParams.set("code_challenge_method", "S256");
  if (o.resource) url.searchParams.set("resource", o.resource);
  return url.href;
}

/** Thrown when the provider refused a grant (`invalid_grant`): the grant is dead, retrying will not help. */
export class GrantRefusedError extends Error {
  override readonly name = "GrantRefusedError";
}

export async function exchangeCode(
  p: OpenProvider,
  o: { code: string; verifier: string; redirectUri: string; resource: string | null },
  timeoutMs: number,
): Promise<UpstreamTokenResponse> {
  const form: Record<string, string> = {
    grant_type: "authorization_code",
    code: o.code,
    redirect_uri: o.redirectUri,
    code_verifier: o.verifier,
  };
  if (o.resource) form.resource = o.resource;
  return tokenRequest(p, form, timeoutMs);
}

export async function refreshGrant(p: OpenProvider, refreshToken: string, timeoutMs: number): Promise<UpstreamTokenResponse> {
  return tokenRequest(p, { grant_type: "refresh_token", refresh_token: refreshToken }, timeoutMs);
}

/** RFC 7009. Resolves to the HTTP status; network failures reject. */
export async function revokeUpstream(p: OpenProvider, token: string, hint: "access_token" | "refresh_token", timeoutMs: number): Promise<number> {
  if (!p.config.revocation_endpoint) throw new TypeError("provider has no revocation_endpoint");
  const { headers, body } = clientAuth(p, { token, token_type_hint: hint });
  const res = await fetch(p.config.revocation_endpoint, { method: "POST", headers, body, signal: AbortSignal.timeout(timeoutMs), redirect: "manual" });
  await res.body?.cancel();
  return res.status;
}

/**
 * The user the provider authenticated: the OIDC id_token `sub` (received straight from the token endpoint over the
 * back channel, so OIDC Core §3.1.3.7 lets TLS stand in for the signature check), else the userinfo endpoint's
 * `sub` / `id` / `login`, else null.
 */
export async function upstreamUserId(p: OpenProvider, t: UpstreamTokenResponse, timeoutMs: number): Promise<string | null> {
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
    const res = await fetch(p.config.userinfo_endpoint, {
      headers: { authorization: `Bearer ${t.access_token}`, accept: "application/json" },
      signal: AbortSignal.timeout(timeoutMs),
    });
    if (!res.ok) return null;
    const info = (await res.json()) as Record<string, unknown>;
    const id = info.sub ?? info.id ?? info.login;
    return typeof id === "string" || typeof id === "number" ? String(id) : null;
  } catch {
    return null;
  }
}

// internal

function clientAuth(p: OpenProvider, form: Record<string, string>): { headers: Record<string, string>; body: string } {
  const headers: Record<string, string> = { "content-type": "application/x-www-form-urlencoded", accept: "application/json" };
  const params = new URLSearchParams(form);
  if (p.config.token_endpoint_auth_method === "client_secret_basic") {
    // RFC 6749 §2.3.1: id and secret are form-urlencoded before base64.
    const id = encodeURIComponent(p.config.client_id);
    const secret = encodeURIComponent(p.config.client_secret);
    headers.authorization = `Basic ${Buffer.from(`${id}:${secret}`).toString("base64")}`;
  } else {
    params.set("client_id", p.config.client_id);
    params.set("client_secret", p.config.client_secret);
  }
  return { headers, body: params.toString() };
}

async function tokenRequest(p: OpenProvider, form: Record<string, string>, timeoutMs: number): Promise<UpstreamTokenResponse> {
  const { headers, body } = clientAuth(p, form);
  let res: Response;
  try {
    res = await fetch(p.config.token_endpoint, { method: "POST", headers, body, signal: AbortSignal.timeout(timeoutMs), redirect: "manual" });
  } catch (cause) {
    throw new AthError("OAUTH_ERROR", `The token endpoint of '${p.provider_id}' could not be reached`, { provider_id: p.provider_id }, { cause });
  }
  const text = await res.text();
  let payload: unknown = null;
  try {
    payload = JSON.parse(text);
  } catch {
    // a non-JSON answer is reported below
  }
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
