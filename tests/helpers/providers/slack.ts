/**
 * A Slack mock (OAuth v2, user tokens, token rotation on), reproducing:
 * - https://docs.slack.dev/authentication/installing-with-oauth — user scopes in `user_scope`, comma-separated;
 *   the user token under `authed_user` with the user's id;
 * - https://docs.slack.dev/reference/methods/oauth.v2.access — form or JSON, client credentials by HTTP Basic
 *   (preferred) or as parameters; every answer is HTTP 200, failures `{"ok":false,"error":…}`;
 * - https://docs.slack.dev/authentication/using-token-rotation — 12 h tokens, `grant_type=refresh_token` answered
 *   at the top level with `token_type: "user"`, refresh tokens rotated;
 * - https://docs.slack.dev/authentication/using-pkce — PKCE parameters are refused unless the app enabled PKCE
 *   (this app has not: it is a confidential client);
 * - https://docs.slack.dev/reference/methods/auth.revoke and https://docs.slack.dev/reference/methods/conversations.history
 *   — the token as Bearer; `invalid_auth`, `missing_scope` with `needed`/`provided`.
 */
import { errorPage, expiresIn, pendingFrom, scopesOf, serveMock, type MockCore, type MockOptions, type MockProvider, type MockRequest } from "./base.ts";

export const SLACK_USER_SCOPES = [
  "channels:read", "channels:history", "groups:read", "groups:history", "im:read", "im:history",
  "chat:write", "users:read", "users:read.email", "search:read", "reactions:read", "reactions:write", "files:read",
];
const TEAM = { id: "T0MOCK", name: "Mock Workspace" };

export function startSlackMock(options: MockOptions): MockProvider {
  return serveMock(
    {
      name: "Slack",
      scopes: SLACK_USER_SCOPES,
      tokenPrefix: { access: "xoxe.xoxp-1-", refresh: "xoxe-1-" },
      defaultAccessTokenTtl: 43200,
      routes: [
        { route: "authorize", method: "GET", path: "/oauth/v2/authorize", handle: authorize },
        { route: "token", method: "POST", path: "/api/oauth.v2.access", handle: token },
        { route: "revoke", method: "*", path: "/api/auth.revoke", handle: revoke },
        { route: "api", method: "*", path: "/api/conversations.history", handle: history },
        // https://docs.slack.dev/reference/methods/auth.test — "No scopes required": who the token is
        { route: "api", method: "*", path: "/api/auth.test", handle: authTest },
      ],
    },
    options,
    (url) => ({
      authorize_endpoint: `${url}/oauth/v2/authorize`,
      token_endpoint: `${url}/api/oauth.v2.access`,
      api_base_url: `${url}/api`,
      revocation_endpoint: `${url}/api/auth.revoke`,
    }),
  );
}

// internal

const ok = (fields: Record<string, unknown>) => Response.json({ ok: true, ...fields });
const fail = (error: string, extra: Record<string, unknown> = {}) => Response.json({ ok: false, error, ...extra });

function authorize(req: MockRequest, mock: MockCore): Response {
  const q = req.url.searchParams;
  if (q.get("client_id") !== mock.clientId) return errorPage(400, "invalid_client_id", "This app's client_id is not valid.");
  if (!mock.registered(q.get("redirect_uri"))) return errorPage(400, "bad_redirect_uri", "redirect_uri does not match the app's Redirect URLs.");
  if (q.has("code_challenge")) return errorPage(400, "pkce_not_enabled", "PKCE parameters were sent but this app has not enabled PKCE.");
  const userScopes = scopesOf(q, "user_scope", ",");
  const unknown = [...userScopes, ...scopesOf(q, "scope", ",")].filter((s) => !SLACK_USER_SCOPES.includes(s));
  if (userScopes.length === 0 || unknown.length > 0) {
    return mock.authorizeError(q.get("redirect_uri")!, q.get("state"), "invalid_scope", `Invalid permissions requested: ${unknown.join(",") || "(no user_scope)"}`);
  }
  return mock.consent(pendingFrom(q, userScopes));
}

function token(req: MockRequest, mock: MockCore): Response {
  const body = mock.parseBody(req);
  if (body.format === "invalid") return fail("invalid_arguments");
  const auth = mock.clientAuth(req.headers, body.fields);
  if (auth.clientId !== mock.clientId) return fail("invalid_client_id");
  if (!auth.valid) return fail("bad_client_secret");
  const f = body.fields;
  if (f.grant_type === "refresh_token") {
    const grant = mock.refresh(f.refresh_token, auth.clientId, { rotate: true });
    if (!grant) return fail("invalid_refresh_token");
    return ok({ app_id: "A0MOCK", user_id: grant.user.id, team: TEAM, enterprise: null, is_enterprise_install: false,
      access_token: grant.accessToken, token_type: "user", scope: grant.scopes.join(","), refresh_token: grant.refreshToken, expires_in: expiresIn(grant) });
  }
  const redeemed = mock.redeem(f.code, { clientId: auth.clientId, redirectUri: f.redirect_uri, verifier: undefined });
  if ("error" in redeemed) return fail(redeemed.description.includes("redirect_uri") ? "bad_redirect_uri" : "invalid_code");
  const grant = mock.issue(redeemed, { refresh: true });
  return ok({
    app_id: "A0MOCK",
    authed_user: { id: `U${grant.user.id}`, scope: grant.scopes.join(","), access_token: grant.accessToken, token_type: "user",
      refresh_token: grant.refreshToken, expires_in: expiresIn(grant) },
    team: TEAM,
    enterprise: null,
    is_enterprise_install: false,
  });
}

function revoke(req: MockRequest, mock: MockCore): Response {
  const grant = mock.bearer(req.headers);
  if (!grant) return fail("invalid_auth");
  mock.revoke(grant.accessToken);
  return ok({ revoked: true });
}

function authTest(req: MockRequest, mock: MockCore): Response {
  const grant = mock.bearer(req.headers);
  if (!grant) return fail("invalid_auth");
  return ok({ url: "https://mock.slack.test/", team: "Mock", user: grant.user.login, team_id: "T0MOCK", user_id: `U${grant.user.id}` });
}

function history(req: MockRequest, mock: MockCore): Response {
  const grant = mock.bearer(req.headers);
  if (!grant) return fail("invalid_auth");
  if (!grant.scopes.includes("channels:history")) return fail("missing_scope", { needed: "channels:history", provided: grant.scopes.join(",") });
  const channel = req.url.searchParams.get("channel") ?? mock.parseBody(req).fields.channel;
  if (typeof channel !== "string" || channel === "") return fail("channel_not_found");
  return ok({ messages: [{ type: "message", user: `U${grant.user.id}`, text: "hello from the mock", ts: "1700000000.000100" }], has_more: false });
}
