/**
 * A Dropbox mock, reproducing:
 * - https://www.dropbox.com/developers/documentation/http/documentation#oauth2-authorize and #oauth2-token —
 *   space-separated `scope`, `token_access_type=offline` for a refresh token, PKCE; the token endpoint takes form
 *   bodies, the client by HTTP Basic or body parameters, answers `{access_token, token_type, expires_in: 14400,
 *   refresh_token?, scope, uid, account_id}`; refresh answers carry no refresh token (not rotated);
 * - https://www.dropbox.com/developers/documentation/http/documentation#auth-token-revoke — `POST
 *   /2/auth/token/revoke` with the token as Bearer and no body; it disables the refresh token too;
 * - https://www.dropbox.com/developers/documentation/http/documentation#users-get_current_account and #files-list_folder
 *   — RPC endpoints (POST); `{error_summary, error: {".tag"}}` errors, 401 `invalid_access_token`/`missing_scope`.
 */
import { errorPage, expiresIn, pendingFrom, scopesOf, serveMock, type Grant, type MockCore, type MockOptions, type MockProvider, type MockRequest } from "./base.ts";

export const DROPBOX_SCOPES = ["account_info.read", "files.metadata.read", "files.metadata.write", "files.content.read", "files.content.write", "sharing.read", "sharing.write"];

export function startDropboxMock(options: MockOptions): MockProvider {
  return serveMock(
    {
      name: "Dropbox",
      scopes: DROPBOX_SCOPES,
      tokenPrefix: { access: "sl.u.", refresh: "" },
      defaultAccessTokenTtl: 14400,
      routes: [
        { route: "authorize", method: "GET", path: "/oauth2/authorize", handle: authorize },
        { route: "token", method: "POST", path: "/oauth2/token", handle: token },
        { route: "revoke", method: "POST", path: "/2/auth/token/revoke", handle: revoke },
        { route: "api", method: "POST", path: "/2/users/get_current_account", handle: (req, mock) => rpc(req, mock, "account_info.read", "none", account) },
        { route: "api", method: "POST", path: "/2/files/list_folder", handle: (req, mock) => rpc(req, mock, "files.metadata.read", "json", listFolder) },
      ],
    },
    options,
    (url) => ({
      authorize_endpoint: `${url}/oauth2/authorize`,
      token_endpoint: `${url}/oauth2/token`,
      api_base_url: `${url}/2`,
      revocation_endpoint: `${url}/2/auth/token/revoke`,
    }),
  );
}

// internal

const oauthError = (error: string, description: string) => Response.json({ error, error_description: description }, { status: 400 });
const rpcError = (status: number, tag: string, extra: Record<string, unknown> = {}) =>
  Response.json({ error_summary: `${tag}/...`, error: { ".tag": tag, ...extra } }, { status });

function authorize(req: MockRequest, mock: MockCore): Response {
  const q = req.url.searchParams;
  if (q.get("client_id") !== mock.clientId) return errorPage(400, "Invalid client_id", "The app key is not valid.");
  if (!mock.registered(q.get("redirect_uri"))) return errorPage(400, "Invalid redirect_uri", "It must exactly match one of the redirect URIs you've pre-configured for your app.");
  if (q.get("response_type") !== "code") return errorPage(400, "Invalid response_type", "response_type must be code.");
  const scopes = scopesOf(q, "scope", " ");
  const unknown = scopes.filter((s) => !DROPBOX_SCOPES.includes(s));
  if (unknown.length > 0) return errorPage(400, "Invalid scope", `Unknown scope: ${unknown.join(" ")}`);
  // Without `scope`, Dropbox grants every scope the app has enabled; account_info.read is on every app (the App
  // Console cannot turn it off), so every token can read the current account.
  return mock.consent(pendingFrom(q, scopes.length > 0 ? [...new Set(["account_info.read", ...scopes])] : DROPBOX_SCOPES));
}

function token(req: MockRequest, mock: MockCore): Response {
  const body = mock.parseBody(req);
  if (body.format !== "form") return oauthError("invalid_request", "Content-Type must be application/x-www-form-urlencoded.");
  const auth = mock.clientAuth(req.headers, body.fields);
  if (!auth.valid) return oauthError("invalid_client", "Invalid client_id or client_secret");
  const f = body.fields;
  if (f.grant_type === "refresh_token") {
    const grant = mock.refresh(f.refresh_token, auth.clientId, { rotate: false });
    if (!grant) return oauthError("invalid_grant", "refresh token is invalid or revoked");
    return Response.json({ access_token: grant.accessToken, token_type: "bearer", expires_in: expiresIn(grant) });
  }
  if (f.grant_type !== "authorization_code") return oauthError("unsupported_grant_type", "grant_type must be authorization_code or refresh_token.");
  const redeemed = mock.redeem(f.code, { clientId: auth.clientId, redirectUri: f.redirect_uri, verifier: f.code_verifier });
  if ("error" in redeemed) return oauthError("invalid_grant", "code doesn't exist or has expired");
  const grant = mock.issue(redeemed, { refresh: redeemed.params.get("token_access_type") === "offline" });
  return Response.json({
    access_token: grant.accessToken,
    token_type: "bearer",
    expires_in: expiresIn(grant),
    ...(grant.refreshToken ? { refresh_token: grant.refreshToken } : {}),
    scope: grant.scopes.join(" "),
    uid: grant.user.id,
    account_id: accountId(grant),
  });
}

function revoke(req: MockRequest, mock: MockCore): Response {
  const grant = mock.bearer(req.headers);
  if (!grant) return rpcError(401, "invalid_access_token");
  // An endpoint without arguments takes no body (or the JSON `null`).
  if (req.body !== "" && req.body.trim() !== "null") return new Response("Error in call to API function \"auth/token/revoke\": request body: could not decode input as JSON", { status: 400 });
  mock.revoke(grant.accessToken);
  return Response.json(null);
}

function rpc(req: MockRequest, mock: MockCore, scope: string, args: "none" | "json", render: (g: Grant, body: Record<string, unknown>) => unknown): Response {
  const grant = mock.bearer(req.headers);
  if (!grant) return rpcError(401, "invalid_access_token");
  if (!grant.scopes.includes(scope)) return rpcError(401, "missing_scope", { required_scope: scope });
  const body = mock.parseBody(req);
  if (args === "json" && body.format !== "json") {
    return new Response(`Error in call to API function "${req.url.pathname.slice(3)}": Bad HTTP "Content-Type" header: "${req.headers.get("content-type") ?? ""}".  Expecting one of "application/json", "application/json; charset=utf-8", "text/plain; charset=dropbox-cors-hack".`, { status: 400 });
  }
  return Response.json(render(grant, body.fields));
}

function accountId(g: Grant): string {
  return `dbid:AA${g.user.id}`;
}

function account(g: Grant) {
  return { account_id: accountId(g), name: { display_name: g.user.name }, email: g.user.email, email_verified: true, disabled: false };
}

function listFolder(_g: Grant, body: Record<string, unknown>) {
  const path = typeof body.path === "string" ? body.path : "";
  return { entries: [{ ".tag": "file", name: "notes.txt", path_display: `${path}/notes.txt`, id: "id:mock1" }], cursor: "AAmock", has_more: false };
}
