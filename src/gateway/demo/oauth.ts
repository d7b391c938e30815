/**
 * The sandbox's back-channel endpoints: token (RFC 6749 §4.1.3 with the PKCE check of RFC 7636 §4.6, and
 * refresh with rotation, OAuth 2.1 §4.3.1), revocation (RFC 7009), userinfo and the id_token signing keys.
 */
import { s256 } from "../oauth/pkce.ts";
import { constantTimeEqual, hashSecret } from "../crypto/secrets.ts";
import { issueTokens, revokeGrant, type DemoContext } from "./context.ts";
import { authenticateBearer, authenticateClient, json, oauthError, readForm } from "./http.ts";

export async function token(req: Request, ctx: DemoContext): Promise<Response> {
  const form = await readForm(req);
  if (form instanceof Response) return form;
  const denied = authenticateClient(req, form, ctx);
  if (denied) return denied;
  switch (form.get("grant_type")) {
    case "authorization_code":
      return authorizationCode(form, ctx);
    case "refresh_token":
      return refreshToken(form, ctx);
    case null:
      return oauthError("invalid_request", "grant_type is required");
    default:
      return oauthError("unsupported_grant_type", "grant_type must be authorization_code or refresh_token");
  }
}

/** RFC 7009 §2: 200 whether or not the token existed; revoking a refresh token ends its whole grant. */
export async function revoke(req: Request, ctx: DemoContext): Promise<Response> {
  const form = await readForm(req);
  if (form instanceof Response) return form;
  const denied = authenticateClient(req, form, ctx);
  if (denied) return denied;
  const value = form.get("token");
  if (!value) return oauthError("invalid_request", "token is required");
  const key = hashSecret(value);
  const refresh = ctx.refresh.get(key);
  if (refresh) revokeGrant(ctx, refresh.grantId);
  else ctx.access.delete(key);
  return new Response(null, { status: 200, headers: { "Cache-Control": "no-store" } });
}

export function userinfo(req: Request, ctx: DemoContext): Response {
  const grant = authenticateBearer(req, ctx);
  if (grant instanceof Response) return grant;
  return json({ sub: grant.sub, name: grant.name, preferred_username: grant.sub });
}

export async function jwks(ctx: DemoContext): Promise<Response> {
  const { jwk } = await ctx.signingKey;
  return json({ keys: [jwk] });
}

// internal

async function authorizationCode(form: URLSearchParams, ctx: DemoContext): Promise<Response> {
  const code = ctx.codes.get(hashSecret(form.get("code") ?? ""));
  if (!code) return oauthError("invalid_grant", "the code is invalid or expired");
  // RFC 6749 §4.1.2: a code is used once; a second use revokes what the first one issued
  if (code.used) {
    revokeGrant(ctx, code.grantId);
    return oauthError("invalid_grant", "the code was already used");
  }
  // spent by its first redemption, right or wrong: a guessed verifier gets one try
  code.used = true;
  if (form.get("redirect_uri") !== code.redirectUri) return oauthError("invalid_grant", "redirect_uri does not match the authorization request");
  const verifier = form.get("code_verifier");
  // RFC 7636 §4.1: 43–128 unreserved characters
  if (!verifier || !/^[A-Za-z0-9\-._~]{43,128}$/.test(verifier)) return oauthError("invalid_grant", "code_verifier is missing or malformed");
  if (!constantTimeEqual(s256(verifier), code.challenge)) return oauthError("invalid_grant", "code_verifier does not match the code_challenge");
  const body = await issueTokens(ctx, { sub: code.sub, name: code.name, scopes: code.scopes, grantId: code.grantId }, true);
  return json(body, 200, { Pragma: "no-cache" });
}

async function refreshToken(form: URLSearchParams, ctx: DemoContext): Promise<Response> {
  const key = hashSecret(form.get("refresh_token") ?? "");
  const grant = ctx.refresh.get(key);
  if (!grant) return oauthError("invalid_grant", "the refresh token is invalid, expired, revoked or already used");
  // RFC 6749 §6: a refresh may narrow the access token's scope, never widen it
  const asked = form.get("scope");
  const scopes = asked === null ? grant.scopes : [...new Set(asked.split(" ").filter(Boolean))];
  if (scopes.length === 0 || scopes.some((s) => !grant.scopes.includes(s))) {
    return oauthError("invalid_scope", "scope must be a subset of the granted scopes");
  }
  // rotation (OAuth 2.1 §4.3.1): the presented refresh token dies; no await since get(), so no one else took it
  ctx.refresh.delete(key);
  const body = await issueTokens(ctx, grant, false, scopes);
  return json(body, 200, { Pragma: "no-cache" });
}
