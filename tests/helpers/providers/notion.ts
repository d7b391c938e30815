/**
 * A Notion mock (public integration), reproducing:
 * - https://developers.notion.com/docs/authorization — `owner=user` and `response_type=code` on authorize, no scopes;
 * - https://developers.notion.com/reference/create-a-token and https://developers.notion.com/reference/refresh-a-token
 *   — HTTP Basic client authentication and a JSON body, `owner.user.id`, refresh tokens rotated;
 * - https://developers.notion.com/reference/revoke-token — Basic, JSON `{token}`, `Notion-Version` required;
 * - https://developers.notion.com/reference/versioning and https://developers.notion.com/reference/status-codes —
 *   every API call needs `Notion-Version` (400 `missing_version`), errors `{object:"error",status,code,message}`;
 * - https://developers.notion.com/reference/post-search — the API endpoint.
 */
import { errorPage, pendingFrom, serveMock, type Grant, type MockCore, type MockOptions, type MockProvider, type MockRequest } from "./base.ts";

/** The versions the mock knows (https://developers.notion.com/reference/changes-by-version). */
const VERSIONS = ["2022-06-28", "2025-09-03"];
/** The token endpoint's body fields; anything else fails Notion's strict body validation. */
const TOKEN_FIELDS = ["grant_type", "code", "redirect_uri", "refresh_token", "external_account"];
const WORKSPACE = { workspace_id: "a1b2c3d4-0000-4000-8000-000000000001", workspace_name: "Mock Workspace", workspace_icon: null };

export function startNotionMock(options: MockOptions): MockProvider {
  return serveMock(
    {
      name: "Notion",
      scopes: [],
      tokenPrefix: { access: "ntn_", refresh: "nrt_" },
      defaultAccessTokenTtl: 3600,
      routes: [
        { route: "authorize", method: "GET", path: "/v1/oauth/authorize", handle: authorize },
        { route: "token", method: "POST", path: "/v1/oauth/token", handle: token },
        { route: "revoke", method: "POST", path: "/v1/oauth/revoke", handle: revoke },
        { route: "api", method: "POST", path: "/v1/search", handle: search },
        // https://developers.notion.com/reference/get-self — the token's bot user, with the person who authorized it
        { route: "api", method: "GET", path: "/v1/users/me", handle: me },
      ],
    },
    options,
    (url) => ({
      authorize_endpoint: `${url}/v1/oauth/authorize`,
      token_endpoint: `${url}/v1/oauth/token`,
      api_base_url: `${url}/v1`,
      revocation_endpoint: `${url}/v1/oauth/revoke`,
    }),
  );
}

// internal

function apiError(status: number, code: string, message: string): Response {
  return Response.json({ object: "error", status, code, message, request_id: crypto.randomUUID() }, { status });
}

function oauthError(status: number, error: string, description: string): Response {
  return Response.json({ error, error_description: description, request_id: crypto.randomUUID() }, { status });
}

function versionProblem(req: MockRequest): Response | null {
  const v = req.headers.get("notion-version");
  if (v === null) return apiError(400, "missing_version", "Notion-Version header failed validation: Notion-Version header should be defined, instead was `undefined`.");
  if (!VERSIONS.includes(v)) return apiError(400, "validation_error", `Notion-Version header failed validation: \`${v}\` is not a valid version.`);
  return null;
}

function authorize(req: MockRequest, mock: MockCore): Response {
  const q = req.url.searchParams;
  if (q.get("client_id") !== mock.clientId) return errorPage(400, "Invalid client_id", "Missing or invalid client_id.");
  if (!mock.registered(q.get("redirect_uri"))) return errorPage(400, "Invalid redirect_uri", "redirect_uri is not one of the integration's redirect URIs.");
  if (q.get("response_type") !== "code") return errorPage(400, "Invalid response_type", "response_type must be code.");
  if (q.get("owner") !== "user") return errorPage(400, "Invalid owner", "owner must be user.");
  return mock.consent(pendingFrom(q, []));
}

function token(req: MockRequest, mock: MockCore): Response {
  const auth = mock.clientAuth(req.headers, {});
  if (auth.via !== "basic" || !auth.valid) return oauthError(401, "invalid_client", "Client authentication failed: use HTTP Basic with the client id and secret.");
  const body = mock.parseBody(req);
  if (body.format !== "json") return oauthError(400, "invalid_request", "body failed validation: the body must be JSON.");
  const unknown = Object.keys(body.fields).filter((k) => !TOKEN_FIELDS.includes(k));
  if (unknown.length > 0) return oauthError(400, "invalid_request", `body failed validation: unknown field(s) ${unknown.join(", ")}.`);
  const f = body.fields;
  if (f.grant_type === "refresh_token") {
    const grant = mock.refresh(f.refresh_token, auth.clientId, { rotate: true });
    if (!grant) return oauthError(400, "invalid_grant", "Invalid refresh token.");
    return Response.json(tokenBody(grant));
  }
  if (f.grant_type !== "authorization_code") return oauthError(400, "unsupported_grant_type", "grant_type must be authorization_code or refresh_token.");
  const redeemed = mock.redeem(f.code, { clientId: auth.clientId, redirectUri: f.redirect_uri, verifier: f.code_verifier });
  if ("error" in redeemed) return oauthError(400, redeemed.error, redeemed.description);
  return Response.json(tokenBody(mock.issue(redeemed, { refresh: true })));
}

function tokenBody(g: Grant) {
  return {
    access_token: g.accessToken,
    token_type: "bearer",
    refresh_token: g.refreshToken,
    bot_id: `bot-${g.id}`,
    ...WORKSPACE,
    owner: { type: "user", user: { object: "user", id: `user-${g.user.id}`, name: g.user.name, avatar_url: null, type: "person", person: { email: g.user.email } } },
    duplicated_template_id: null,
    request_id: crypto.randomUUID(),
  };
}

function revoke(req: MockRequest, mock: MockCore): Response {
  const auth = mock.clientAuth(req.headers, {});
  if (auth.via !== "basic" || !auth.valid) return apiError(401, "unauthorized", "Client authentication failed.");
  const version = versionProblem(req);
  if (version) return version;
  const body = mock.parseBody(req);
  if (body.format !== "json" || typeof body.fields.token !== "string") return apiError(400, "validation_error", "body failed validation: body.token should be defined.");
  mock.revoke(body.fields.token);
  return Response.json({ request_id: crypto.randomUUID() });
}

function me(req: MockRequest, mock: MockCore): Response {
  const grant = mock.bearer(req.headers);
  if (!grant) return apiError(401, "unauthorized", "API token is invalid.");
  const version = versionProblem(req);
  if (version) return version;
  return Response.json({
    object: "user",
    id: "16d84278-ab0e-484c-9bdd-b35da3bd8905",
    type: "bot",
    name: "Mock integration",
    bot: { owner: { type: "user", user: { object: "user", id: grant.user.id, name: grant.user.name, type: "person" } } },
  });
}

function search(req: MockRequest, mock: MockCore): Response {
  const grant = mock.bearer(req.headers);
  if (!grant) return apiError(401, "unauthorized", "API token is invalid.");
  const version = versionProblem(req);
  if (version) return version;
  return Response.json({
    object: "list",
    results: [{ object: "page", id: "59833787-2cf9-4fdf-8782-e53db20768a5", properties: { title: { title: [{ plain_text: "Mock page" }] } } }],
    next_cursor: null,
    has_more: false,
    type: "page_or_data_source",
  });
}
