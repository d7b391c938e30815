/**
 * The gateway as an OAuth 2.0 client of a provider — one client for every provider: the authorization request URL,
 * the code exchange (RFC 6749 §4.1.3 + RFC 7636 code_verifier), refresh (§6), revocation (RFC 7009) and the user's id.
 *
 * Providers differ from the RFCs in known places (DESIGN §11). Each is a *named quirk point* in quirks.ts — a small
 * pure function that reads the provider's configuration — so a template can say "GitHub answers form-encoded" without
 * a per-provider branch anywhere. The client is given what it needs (the provider with its secret open, `fetch`, a
 * timeout); it never touches the store.
 */
import { decodeJwt } from "jose";
import { z } from "zod";
import { AthError, type ProviderConfig } from "../../protocol/index.ts";
import type { Fetch } from "../context.ts";
import {
  answerError,
  isRefusedGrant,
  joinScopes,
  normalizeScope,
  readAnswer,
  refreshForm,
  revocationRequest,
  revocationSucceeded,
  scopeParameter,
  tokenFields,
  tokenRequest,
  userIdAt,
  userIdFromUserinfo,
  userIdSource,
  userinfoRequest,
  usesPkce,
  type Form,
  type Outgoing,
  type TokenKind,
} from "./quirks.ts";

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
  /** Space-delimited (quirks.normalizeScope), whatever the provider's own separator. */
  scope: z.preprocess(normalizeScope, z.string().optional()),
  id_token: z.string().optional(),
  /** The user id read from the answer itself (`user_id_source: token_response`), e.g. Slack's `authed_user.id`. */
  user_id: z.string().optional(),
});
export type UpstreamTokenResponse = z.infer<typeof UpstreamTokenResponse>;

/** Thrown when the provider refused a grant (`invalid_grant` or its own word for it): the grant is dead. */
export class GrantRefusedError extends Error {
  override readonly name = "GrantRefusedError";
}

/** The provider's authorize URL for one session (DESIGN §3 Phase B step 2). */
export function authorizeUrl(
  p: OAuthProvider,
  o: { redirectUri: string; scopes: string[]; state: string; codeChallenge: string; resource: string | null },
): string {
  const c = p.config;
  const url = new URL(c.authorize_endpoint);
  // Without the gateway's consent page, the provider must ask the person: it remembers consent per OAuth client, and
  // every agent shares the gateway's client (OIDC Core §3.1.2.1 prompt=consent; extra_authorize_params may override).
  if (c.consent_screen === false) url.searchParams.set("prompt", "consent");
  for (const [k, v] of Object.entries(c.extra_authorize_params ?? {})) url.searchParams.set(k, v);
  url.searchParams.set("response_type", "code");
  url.searchParams.set("client_id", c.client_id);
  url.searchParams.set("redirect_uri", o.redirectUri);
  const scopeParam = scopeParameter(c);
  if (scopeParam !== null) url.searchParams.set(scopeParam, joinScopes(c, o.scopes));
  url.searchParams.set("state", o.state);
  if (usesPkce(c)) {
    url.searchParams.set("code_challenge", o.codeChallenge);
    url.searchParams.set("code_challenge_method", "S256");
  }
  if (o.resource) url.searchParams.set("resource", o.resource);
  return url.href;
}

export async function exchangeCode(
  p: OAuthProvider,
  o: { code: string; verifier: string; redirectUri: string; resource: string | null },
  out: Outbound,
): Promise<UpstreamTokenResponse> {
  const form: Form = { grant_type: "authorization_code", code: o.code, redirect_uri: o.redirectUri };
  if (usesPkce(p.config)) form.code_verifier = o.verifier;
  if (o.resource) form.resource = o.resource;
  return callTokenEndpoint(p, form, out);
}

/** RFC 6749 §6. `grantScopes` are the grant's scopes, for providers that want them repeated (Microsoft). */
export async function refreshGrant(p: OAuthProvider, refreshToken: string, grantScopes: readonly string[], out: Outbound): Promise<UpstreamTokenResponse> {
  return callTokenEndpoint(p, refreshForm(p.config, refreshToken, grantScopes), out);
}

/** Revokes one token at the provider (RFC 7009 or the provider's way). Resolves to whether it worked; network failures reject. */
export async function revokeUpstream(p: OAuthProvider, token: string, kind: TokenKind, out: Outbound): Promise<{ ok: boolean; status: number }> {
  if (!p.config.revocation_endpoint) throw new TypeError("provider has no revocation_endpoint");
  const r = revocationRequest(p.config, token, kind);
  const res = await out.fetch(r.url, { ...init(r, out), redirect: "manual" });
  const text = await res.text();
  return { ok: revocationSucceeded(res.status, readAnswer(text, res.headers.get("content-type"))), status: res.status };
}

/**
 * The user the provider authenticated, from where the provider's `user_id_source` says (null: unknown, the gateway
 * then uses a per-browser pseudonym). `auto`: the id_token's `sub`, else the userinfo endpoint's `sub`/`id`/`login`.
 */
export async function upstreamUserId(p: OAuthProvider, t: UpstreamTokenResponse, out: Outbound): Promise<string | null> {
  const source = userIdSource(p.config);
  if (source === "token_response") return t.user_id ?? null;
  if (source === "id_token" || source === "auto") {
    const sub = idTokenSubject(p.config, t.id_token);
    if (sub !== null || source === "id_token") return sub;
  }
  if (!p.config.userinfo_endpoint) return null;
  try {
    const res = await out.fetch(p.config.userinfo_endpoint, init(userinfoRequest(p.config, t.access_token), out));
    if (!res.ok) return null;
    return userIdFromUserinfo(p.config, await res.json());
  } catch {
    return null;
  }
}

// internal

function init(r: Outgoing, out: Outbound): RequestInit {
  return { method: r.method, headers: r.headers, body: r.body, signal: AbortSignal.timeout(out.timeoutMs) };
}

/**
 * The id_token's `sub` when the token is for this client — received straight from the token endpoint over the back
 * channel, so OIDC Core §3.1.3.7 lets TLS stand in for the signature check.
 */
function idTokenSubject(c: ProviderConfig, idToken: string | undefined): string | null {
  if (!idToken) return null;
  try {
    const claims = decodeJwt(idToken);
    const aud = Array.isArray(claims.aud) ? claims.aud : [claims.aud];
    return typeof claims.sub === "string" && claims.sub !== "" && aud.includes(c.client_id) ? claims.sub : null;
  } catch {
    return null;
  }
}

async function callTokenEndpoint(p: OAuthProvider, form: Form, out: Outbound): Promise<UpstreamTokenResponse> {
  let res: Response;
  let text: string;
  try {
    res = await out.fetch(p.config.token_endpoint, { ...init(tokenRequest(p.config, form), out), redirect: "manual" });
    text = await res.text();
  } catch (cause) {
    throw new AthError("OAUTH_ERROR", `The token endpoint of '${p.provider_id}' could not be reached`, { provider_id: p.provider_id }, { cause });
  }
  const payload = readAnswer(text, res.headers.get("content-type"));
  const error = answerError(payload) ?? (res.ok ? null : `http_${res.status}`);
  if (error !== null) {
    if (isRefusedGrant(p.config, error)) throw new GrantRefusedError(`provider '${p.provider_id}' refused the grant: ${error}`);
    throw new AthError("OAUTH_ERROR", `The provider '${p.provider_id}' rejected the token request: ${error}`, {
      provider_id: p.provider_id,
      upstream_error: error,
      upstream_status: res.status,
    });
  }
  const fields = tokenFields(p.config, payload);
  const userId = userIdSource(p.config) === "token_response" && p.config.user_id_path ? userIdAt(payload, p.config.user_id_path) : null;
  const parsed = UpstreamTokenResponse.safeParse(userId === null ? fields : { ...(fields as object), user_id: userId });
  if (!parsed.success) {
    throw new AthError("OAUTH_ERROR", `The provider '${p.provider_id}' returned a malformed token response`, { provider_id: p.provider_id });
  }
  return parsed.data;
}
