/**
 * A Google mock (web server application), reproducing:
 * - https://developers.google.com/identity/protocols/oauth2/web-server — `scope` space-delimited (an unknown scope
 *   is an "Error 400: invalid_scope" page, no redirect); a refresh token only with `access_type=offline`, and for a
 *   person who already granted the client only again with `prompt=consent`; PKCE; refresh answers carry no new
 *   refresh token; `POST /revoke` with `token=…` and no client authentication (revoking a refresh token revokes the
 *   grant);
 * - https://developers.google.com/identity/openid-connect/openid-connect — id_token (`sub`, aud = client id), userinfo;
 * - https://developers.google.com/workspace/gmail/api/reference/rest/v1/users/getProfile — the API endpoint, with
 *   Google's `{"error":{"code","message","status"}}` errors (401 UNAUTHENTICATED, 403 PERMISSION_DENIED).
 */
import { errorPage, expiresIn, pendingFrom, scopesOf, serveMock, type MockCore, type MockOptions, type MockProvider, type MockRequest } from "./base.ts";

const G = "https://www.googleapis.com/auth/";
export const GOOGLE_SCOPES = ["openid", "email", "profile", `${G}gmail.readonly`, `${G}gmail.send`, `${G}gmail.modify`, `${G}drive.readonly`, `${G}drive.file`, `${G}calendar.readonly`, `${G}calendar.events`];

export function startGoogleMock(options: MockOptions): MockProvider {
  /** People who already granted this client something: Google issues them a refresh token only with prompt=consent. */
  const consentedBefore = new Set<string>();
  return serveMock(
    {
      name: "Google",
      scopes: GOOGLE_SCOPES,
      tokenPrefix: { access: "ya29.", refresh: "1//" },
      defaultAccessTokenTtl: 3599,
      routes: [
        { route: "authorize", method: "GET", path: "/o/oauth2/v2/auth", handle: authorize },
        { route: "token", method: "POST", path: "/token", handle: (req, mock) => token(req, mock, consentedBefore) },
        { route: "revoke", method: "POST", path: "/revoke", handle: revoke },
        { route: "userinfo", method: "GET", path: "/v1/userinfo", handle: userinfo },
        // https://developers.google.com/identity/openid-connect/openid-connect#obtaininguserprofileinformation (www.googleapis.com)
        { route: "api", method: "GET", path: "/oauth2/v3/userinfo", handle: userinfo },
        { route: "api", method: "GET", path: "/gmail/v1/users/me/profile", handle: profile },
      ],
    },
    options,
    (url) => ({
      authorize_endpoint: `${url}/o/oauth2/v2/auth`,
      token_endpoint: `${url}/token`,
      api_base_url: url,
      userinfo_endpoint: `${url}/v1/userinfo`,
      revocation_endpoint: `${url}/revoke`,
    }),
  );
}

// internal

const oauthError = (status: number, error: string, description: string) => Response.json({ error, error_description: description }, { status });
const apiError = (code: number, status: string, message: string) => Response.json({ error: { code, message, status } }, { status: code });

function authorize(req: MockRequest, mock: MockCore): Response {
  const q = req.url.searchParams;
  if (q.get("client_id") !== mock.clientId) return errorPage(401, "Error 401: invalid_client", "The OAuth client was not found.");
  if (!mock.registered(q.get("redirect_uri"))) return errorPage(400, "Error 400: redirect_uri_mismatch", "The redirect URI is not registered for this client.");
  if (q.get("response_type") !== "code") return errorPage(400, "Error 400: invalid_request", "Invalid response_type.");
  const scopes = scopesOf(q, "scope", " ");
  const unknown = scopes.filter((s) => !GOOGLE_SCOPES.includes(s));
  if (scopes.length === 0 || unknown.length > 0) return errorPage(400, "Error 400: invalid_scope", `Some requested scopes were invalid: ${unknown.join(" ") || "(none)"}`);
  return mock.consent(pendingFrom(q, scopes));
}

async function token(req: MockRequest, mock: MockCore, consentedBefore: Set<string>): Promise<Response> {
  const body = mock.parseBody(req);
  if (body.format !== "form") return oauthError(400, "invalid_request", "Invalid request: the body must be application/x-www-form-urlencoded.");
  const auth = mock.clientAuth(req.headers, body.fields);
  if (!auth.valid) return oauthError(401, "invalid_client", "Unauthorized");
  const f = body.fields;
  if (f.grant_type === "refresh_token") {
    const grant = mock.refresh(f.refresh_token, auth.clientId, { rotate: false });
    if (!grant) return oauthError(400, "invalid_grant", "Token has been expired or revoked.");
    return Response.json({ access_token: grant.accessToken, expires_in: expiresIn(grant), scope: grant.scopes.join(" "), token_type: "Bearer" });
  }
  if (f.grant_type !== "authorization_code") return oauthError(400, "unsupported_grant_type", "Invalid grant_type.");
  const redeemed = mock.redeem(f.code, { clientId: auth.clientId, redirectUri: f.redirect_uri, verifier: f.code_verifier });
  if ("error" in redeemed) return oauthError(400, "invalid_grant", "Bad Request");
  const offline = redeemed.params.get("access_type") === "offline";
  const reconsented = redeemed.params.get("prompt")?.split(" ").includes("consent") === true;
  const refresh = offline && (reconsented || !consentedBefore.has(mock.user.id));
  consentedBefore.add(mock.user.id);
  const grant = mock.issue(redeemed, { refresh });
  return Response.json({
    access_token: grant.accessToken,
    expires_in: expiresIn(grant),
    ...(grant.refreshToken ? { refresh_token: grant.refreshToken } : {}),
    scope: grant.scopes.join(" "),
    token_type: "Bearer",
    ...(grant.scopes.includes("openid") ? { id_token: await mock.idToken(grant, { email_verified: true }) } : {}),
  });
}

function revoke(req: MockRequest, mock: MockCore): Response {
  const body = mock.parseBody(req);
  const tokenValue = body.fields.token ?? req.url.searchParams.get("token");
  if (body.format === "invalid" || !mock.revoke(tokenValue)) return oauthError(400, "invalid_token", "Token expired or revoked");
  return Response.json({});
}

function userinfo(req: MockRequest, mock: MockCore): Response {
  const grant = mock.bearer(req.headers);
  if (!grant) return apiError(401, "UNAUTHENTICATED", "Request is missing required authentication credential.");
  return Response.json({ sub: grant.user.id, name: grant.user.name, email: grant.user.email, email_verified: true });
}

function profile(req: MockRequest, mock: MockCore): Response {
  const grant = mock.bearer(req.headers);
  if (!grant) return apiError(401, "UNAUTHENTICATED", "Request had invalid authentication credentials.");
  if (![`${G}gmail.readonly`, `${G}gmail.modify`].some((s) => grant.scopes.includes(s))) {
    return apiError(403, "PERMISSION_DENIED", "Request had insufficient authentication scopes.");
  }
  return Response.json({ emailAddress: grant.user.email, messagesTotal: 3, threadsTotal: 2, historyId: "1001" });
}
