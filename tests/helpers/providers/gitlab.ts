/**
 * A GitLab (Doorkeeper) mock, reproducing:
 * - https://docs.gitlab.com/api/oauth2/ — `response_type=code`, space-separated scopes (an unknown one is redirected
 *   back as `invalid_scope`), PKCE; the token endpoint takes the client by body parameters or HTTP Basic, answers
 *   `{access_token, token_type, expires_in: 7200, refresh_token, scope, created_at, id_token?}`; a refresh invalidates
 *   the old access and refresh tokens; `POST /oauth/revoke` (RFC 7009) with the client's credentials;
 * - https://docs.gitlab.com/integration/openid_connect_provider/ — id_token and /oauth/userinfo with `openid`;
 * - https://docs.gitlab.com/api/users/#get-the-current-user — GET /api/v4/user, `403 insufficient_scope`.
 */
import { expiresIn, errorPage, pendingFrom, scopesOf, serveMock, type MockCore, type MockOptions, type MockProvider, type MockRequest } from "./base.ts";

export const GITLAB_SCOPES = ["api", "read_api", "read_user", "read_repository", "write_repository", "read_registry", "write_registry", "openid", "profile", "email"];

export function startGitLabMock(options: MockOptions): MockProvider {
  return serveMock(
    {
      name: "GitLab",
      scopes: GITLAB_SCOPES,
      tokenPrefix: { access: "", refresh: "" },
      defaultAccessTokenTtl: 7200,
      routes: [
        { route: "authorize", method: "GET", path: "/oauth/authorize", handle: authorize },
        { route: "token", method: "POST", path: "/oauth/token", handle: token },
        { route: "revoke", method: "POST", path: "/oauth/revoke", handle: revoke },
        { route: "userinfo", method: "GET", path: "/oauth/userinfo", handle: userinfo },
        { route: "api", method: "GET", path: "/api/v4/user", handle: user },
      ],
    },
    options,
    (url) => ({
      authorize_endpoint: `${url}/oauth/authorize`,
      token_endpoint: `${url}/oauth/token`,
      api_base_url: `${url}/api/v4`,
      userinfo_endpoint: `${url}/oauth/userinfo`,
      revocation_endpoint: `${url}/oauth/revoke`,
    }),
  );
}

// internal

const oauthError = (status: number, error: string, description: string) => Response.json({ error, error_description: description }, { status });

function authorize(req: MockRequest, mock: MockCore): Response {
  const q = req.url.searchParams;
  if (q.get("client_id") !== mock.clientId || !mock.registered(q.get("redirect_uri"))) {
    return errorPage(400, "An error has occurred", "Client authentication failed due to unknown client, no client authentication included, or unsupported authentication method.");
  }
  const state = q.get("state");
  if (q.get("response_type") !== "code") return mock.authorizeError(q.get("redirect_uri")!, state, "unsupported_response_type", "The authorization server does not support this response type.");
  const scopes = scopesOf(q, "scope", " ");
  if (scopes.length === 0 || scopes.some((s) => !GITLAB_SCOPES.includes(s))) {
    return mock.authorizeError(q.get("redirect_uri")!, state, "invalid_scope", "The requested scope is invalid, unknown, or malformed.");
  }
  return mock.consent(pendingFrom(q, scopes));
}

async function token(req: MockRequest, mock: MockCore): Promise<Response> {
  const body = mock.parseBody(req);
  if (body.format === "invalid") return oauthError(400, "invalid_request", "The request is missing a required parameter.");
  const auth = mock.clientAuth(req.headers, body.fields);
  if (!auth.valid) return oauthError(401, "invalid_client", "Client authentication failed due to unknown client, no client authentication included, or unsupported authentication method.");
  const f = body.fields;
  const invalidGrant = () => oauthError(400, "invalid_grant", "The provided authorization grant is invalid, expired, revoked, does not match the redirection URI used in the authorization request, or was issued to another client.");
  let grant;
  if (f.grant_type === "refresh_token") {
    grant = mock.refresh(f.refresh_token, auth.clientId, { rotate: true });
    if (!grant) return invalidGrant();
  } else if (f.grant_type === "authorization_code") {
    const redeemed = mock.redeem(f.code, { clientId: auth.clientId, redirectUri: f.redirect_uri, verifier: f.code_verifier });
    if ("error" in redeemed) return invalidGrant();
    grant = mock.issue(redeemed, { refresh: true });
  } else return oauthError(400, "unsupported_grant_type", "The authorization grant type is not supported by the authorization server.");
  return Response.json({
    access_token: grant.accessToken,
    token_type: "Bearer",
    expires_in: expiresIn(grant),
    refresh_token: grant.refreshToken,
    scope: grant.scopes.join(" "),
    created_at: Math.floor(Date.now() / 1000),
    ...(grant.scopes.includes("openid") ? { id_token: await mock.idToken(grant, { nickname: grant.user.login }) } : {}),
  });
}

function revoke(req: MockRequest, mock: MockCore): Response {
  const body = mock.parseBody(req);
  const auth = mock.clientAuth(req.headers, body.fields);
  if (!auth.valid) return oauthError(403, "unauthorized_client", "You are not authorized to revoke this token.");
  mock.revoke(body.fields.token);
  // RFC 7009 §2.2: an unknown or already-invalid token is answered 200 too.
  return Response.json({});
}

function userinfo(req: MockRequest, mock: MockCore): Response {
  const grant = mock.bearer(req.headers);
  if (!grant || !grant.scopes.includes("openid")) return oauthError(401, "invalid_token", "The access token is invalid.");
  return Response.json({ sub: grant.user.id, name: grant.user.name, nickname: grant.user.login, email: grant.user.email });
}

function user(req: MockRequest, mock: MockCore): Response {
  const grant = mock.bearer(req.headers);
  if (!grant) return Response.json({ message: "401 Unauthorized" }, { status: 401 });
  if (!["api", "read_api", "read_user"].some((s) => grant.scopes.includes(s))) {
    return Response.json({ error: "insufficient_scope", error_description: "The request requires higher privileges than provided by the access token.", scope: "api read_api read_user" }, { status: 403 });
  }
  return Response.json({ id: Number(grant.user.id), username: grant.user.login, name: grant.user.name, email: grant.user.email, state: "active" });
}
