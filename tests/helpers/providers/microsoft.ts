/**
 * A Microsoft identity platform (v2) + Graph mock, reproducing:
 * - https://learn.microsoft.com/en-us/entra/identity-platform/v2-oauth2-auth-code-flow — space-separated scopes
 *   (an unknown one is redirected back as `invalid_scope` with an AADSTS description); the token endpoint takes
 *   only `application/x-www-form-urlencoded`, client_secret in the body or HTTP Basic; a refresh token only with
 *   `offline_access`, an id_token only with `openid`; `scope` is required on the refresh leg; refresh tokens are
 *   replaced on every refresh; errors `{error, error_description: "AADSTS…", error_codes, trace_id, correlation_id}`;
 * - https://learn.microsoft.com/en-us/entra/identity-platform/scopes-oidc — offline_access is never echoed in `scope`;
 * - https://learn.microsoft.com/en-us/graph/api/user-get — GET /me with Graph's `{"error":{"code","message"}}` errors.
 * There is no per-grant revocation endpoint.
 */
import { errorPage, expiresIn, pendingFrom, scopesOf, serveMock, type Grant, type MockCore, type MockOptions, type MockProvider, type MockRequest } from "./base.ts";

const OIDC = ["openid", "profile", "email", "offline_access"];
export const MICROSOFT_SCOPES = [...OIDC, "User.Read", "Mail.Read", "Mail.Send", "Calendars.Read", "Calendars.ReadWrite", "Files.Read", "Files.ReadWrite", "Contacts.Read"];

export function startMicrosoftMock(options: MockOptions): MockProvider {
  return serveMock(
    {
      name: "Microsoft",
      scopes: MICROSOFT_SCOPES,
      tokenPrefix: { access: "eyJ0eXAiOiJKV1QiLCJub25jZSI6Im1vY2si.", refresh: "0.AX0A" },
      defaultAccessTokenTtl: 3599,
      routes: [
        { route: "authorize", method: "GET", path: "/common/oauth2/v2.0/authorize", handle: authorize },
        { route: "token", method: "POST", path: "/common/oauth2/v2.0/token", handle: token },
        { route: "userinfo", method: "GET", path: "/oidc/userinfo", handle: userinfo },
        { route: "api", method: "GET", path: "/v1.0/me", handle: me },
      ],
    },
    options,
    (url) => ({
      authorize_endpoint: `${url}/common/oauth2/v2.0/authorize`,
      token_endpoint: `${url}/common/oauth2/v2.0/token`,
      api_base_url: `${url}/v1.0`,
      userinfo_endpoint: `${url}/oidc/userinfo`,
    }),
  );
}

// internal

function aadError(status: number, error: string, code: number, text: string): Response {
  const trace = crypto.randomUUID();
  return Response.json(
    { error, error_description: `AADSTS${code}: ${text} Trace ID: ${trace}`, error_codes: [code], timestamp: new Date().toISOString(), trace_id: trace, correlation_id: crypto.randomUUID() },
    { status },
  );
}

/** Canonical spelling of a scope the platform knows (scopes are case-insensitive). */
function canonical(scope: string): string | undefined {
  return MICROSOFT_SCOPES.find((s) => s.toLowerCase() === scope.toLowerCase());
}

function authorize(req: MockRequest, mock: MockCore): Response {
  const q = req.url.searchParams;
  if (q.get("client_id") !== mock.clientId) return errorPage(400, "AADSTS700016", "Application with this identifier was not found in the directory.");
  if (!mock.registered(q.get("redirect_uri"))) return errorPage(400, "AADSTS50011", "The redirect URI specified in the request does not match the redirect URIs configured for the application.");
  const requested = scopesOf(q, "scope", " ");
  const unknown = requested.filter((s) => canonical(s) === undefined);
  if (requested.length === 0 || unknown.length > 0) {
    return mock.authorizeError(q.get("redirect_uri")!, q.get("state"), "invalid_scope", `AADSTS70011: The provided value for the input parameter 'scope' is not valid. ${unknown.join(" ")}`);
  }
  return mock.consent(pendingFrom(q, requested.map((s) => canonical(s)!)));
}

async function token(req: MockRequest, mock: MockCore): Promise<Response> {
  const body = mock.parseBody(req);
  if (body.format !== "form") return aadError(400, "invalid_request", 900144, "The request body must contain the following parameter: 'grant_type'.");
  const auth = mock.clientAuth(req.headers, body.fields);
  if (!auth.valid) return aadError(401, "invalid_client", 7000215, "Invalid client secret provided.");
  const f = body.fields;
  if (f.grant_type === "refresh_token") {
    if (typeof f.scope !== "string" || f.scope.trim() === "") return aadError(400, "invalid_request", 900144, "The request body must contain the following parameter: 'scope'.");
    const grant = mock.refresh(f.refresh_token, auth.clientId, { rotate: true });
    if (!grant) return aadError(400, "invalid_grant", 70008, "The provided authorization code or refresh token has expired due to inactivity.");
    return Response.json(await tokenBody(mock, grant));
  }
  if (f.grant_type !== "authorization_code") return aadError(400, "unsupported_grant_type", 70003, "The app requested an unsupported grant type.");
  const redeemed = mock.redeem(f.code, { clientId: auth.clientId, redirectUri: f.redirect_uri, verifier: f.code_verifier });
  if ("error" in redeemed) return aadError(400, "invalid_grant", 70000, `The provided value for the 'code' parameter is not valid. ${redeemed.description}`);
  const grant = mock.issue(redeemed, { refresh: redeemed.scopes.includes("offline_access") });
  return Response.json(await tokenBody(mock, grant));
}

async function tokenBody(mock: MockCore, grant: Grant) {
  return {
    token_type: "Bearer",
    // offline_access is never echoed: it cannot be part of an access token.
    scope: grant.scopes.filter((s) => s !== "offline_access").join(" "),
    expires_in: expiresIn(grant),
    ext_expires_in: expiresIn(grant),
    access_token: grant.accessToken,
    ...(grant.refreshToken ? { refresh_token: grant.refreshToken } : {}),
    ...(grant.scopes.includes("openid") ? { id_token: await mock.idToken(grant, { oid: `oid-${grant.user.id}`, tid: "9188040d-6c67-4c5b-b112-36a304b66dad", ver: "2.0" }) } : {}),
  };
}

function graphError(status: number, code: string, message: string): Response {
  return Response.json({ error: { code, message, innerError: { date: new Date().toISOString(), "request-id": crypto.randomUUID() } } }, { status });
}

function userinfo(req: MockRequest, mock: MockCore): Response {
  const grant = mock.bearer(req.headers);
  if (!grant) return graphError(401, "InvalidAuthenticationToken", "Access token is empty or invalid.");
  return Response.json({ sub: grant.user.id, name: grant.user.name, email: grant.user.email });
}

function me(req: MockRequest, mock: MockCore): Response {
  const grant = mock.bearer(req.headers);
  if (!grant) return graphError(401, "InvalidAuthenticationToken", "Access token has expired or is not yet valid.");
  if (!grant.scopes.includes("User.Read")) return graphError(403, "Authorization_RequestDenied", "Insufficient privileges to complete the operation.");
  return Response.json({ "@odata.context": "https://graph.microsoft.com/v1.0/$metadata#users/$entity", id: `oid-${grant.user.id}`, displayName: grant.user.name, userPrincipalName: grant.user.email });
}
