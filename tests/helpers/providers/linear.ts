/**
 * A Linear mock, reproducing:
 * - https://linear.app/developers/oauth-2-0-authentication — comma-separated `scope` (an unknown one is redirected
 *   back as `invalid_scope`), PKCE; the token endpoint takes only `application/x-www-form-urlencoded` with
 *   client_id/client_secret in the body and answers `{access_token, token_type, expires_in, scope, refresh_token}`
 *   (scope space-separated), refresh tokens rotated; `POST /oauth/revoke` with the access token as Bearer;
 * - https://linear.app/developers/graphql — one endpoint, `POST /graphql {query}`; `viewer` is the person; an
 *   unauthenticated call is answered with `errors[].extensions.code = AUTHENTICATION_ERROR`.
 */
import { expiresIn, errorPage, pendingFrom, scopesOf, serveMock, type MockCore, type MockOptions, type MockProvider, type MockRequest } from "./base.ts";

export const LINEAR_SCOPES = ["read", "write", "issues:create", "comments:create", "timeSchedule:write", "admin"];

export function startLinearMock(options: MockOptions): MockProvider {
  return serveMock(
    {
      name: "Linear",
      scopes: LINEAR_SCOPES,
      tokenPrefix: { access: "lin_oauth_", refresh: "lin_refresh_" },
      defaultAccessTokenTtl: 86399,
      routes: [
        { route: "authorize", method: "GET", path: "/oauth/authorize", handle: authorize },
        { route: "token", method: "POST", path: "/oauth/token", handle: token },
        { route: "revoke", method: "POST", path: "/oauth/revoke", handle: revoke },
        { route: "graphql", method: "POST", path: "/graphql", handle: graphql },
      ],
    },
    options,
    (url) => ({
      authorize_endpoint: `${url}/oauth/authorize`,
      token_endpoint: `${url}/oauth/token`,
      api_base_url: url,
      userinfo_endpoint: `${url}/graphql`,
      revocation_endpoint: `${url}/oauth/revoke`,
    }),
  );
}

// internal

const oauthError = (error: string, description: string) => Response.json({ error, error_description: description }, { status: 400 });

function authorize(req: MockRequest, mock: MockCore): Response {
  const q = req.url.searchParams;
  if (q.get("client_id") !== mock.clientId || !mock.registered(q.get("redirect_uri"))) return errorPage(400, "Invalid OAuth request", "Unknown client or redirect URI.");
  if (q.get("response_type") !== "code") return mock.authorizeError(q.get("redirect_uri")!, q.get("state"), "unsupported_response_type", "response_type must be code");
  const scopes = scopesOf(q, "scope", ",");
  if (scopes.length === 0 || scopes.some((s) => !LINEAR_SCOPES.includes(s))) {
    return mock.authorizeError(q.get("redirect_uri")!, q.get("state"), "invalid_scope", `Invalid scope: ${q.get("scope") ?? ""}`);
  }
  // `read` is always present.
  return mock.consent(pendingFrom(q, [...new Set(["read", ...scopes])]));
}

function token(req: MockRequest, mock: MockCore): Response {
  const body = mock.parseBody(req);
  if (body.format !== "form") return oauthError("invalid_request", "Content-Type must be application/x-www-form-urlencoded");
  const auth = mock.clientAuth(new Headers(), body.fields); // client_id and client_secret are body parameters
  if (!auth.valid) return Response.json({ error: "invalid_client", error_description: "Client authentication failed" }, { status: 401 });
  const f = body.fields;
  let grant;
  if (f.grant_type === "refresh_token") {
    grant = mock.refresh(f.refresh_token, auth.clientId, { rotate: true });
    if (!grant) return oauthError("invalid_grant", "The refresh token is invalid or expired");
  } else if (f.grant_type === "authorization_code") {
    const redeemed = mock.redeem(f.code, { clientId: auth.clientId, redirectUri: f.redirect_uri, verifier: f.code_verifier });
    if ("error" in redeemed) return oauthError("invalid_grant", redeemed.description);
    grant = mock.issue(redeemed, { refresh: true });
  } else return oauthError("unsupported_grant_type", "grant_type must be authorization_code or refresh_token");
  return Response.json({ access_token: grant.accessToken, token_type: "Bearer", expires_in: expiresIn(grant), scope: grant.scopes.join(" "), refresh_token: grant.refreshToken });
}

function revoke(req: MockRequest, mock: MockCore): Response {
  const grant = mock.bearer(req.headers);
  if (!grant) return oauthError("invalid_token", "The access token is invalid");
  mock.revoke(grant.accessToken);
  return new Response(null, { status: 200 });
}

function graphql(req: MockRequest, mock: MockCore): Response {
  const grant = mock.bearer(req.headers);
  if (!grant) {
    return Response.json({ errors: [{ message: "Authentication required, not authenticated", extensions: { code: "AUTHENTICATION_ERROR", type: "authentication error" } }] }, { status: 401 });
  }
  const body = mock.parseBody(req);
  const query = typeof body.fields.query === "string" ? body.fields.query : "";
  if (body.format !== "json" || query === "") return Response.json({ errors: [{ message: "Must provide query string.", extensions: { code: "GRAPHQL_PARSE_FAILED" } }] }, { status: 400 });
  const data: Record<string, unknown> = {};
  if (/\bviewer\b/.test(query)) data.viewer = { id: `user-${grant.user.id}`, name: grant.user.name, email: grant.user.email };
  if (/\bissues\b/.test(query)) data.issues = { nodes: [{ id: "issue-1", identifier: "ENG-1", title: "Mock issue" }] };
  return Response.json({ data });
}
