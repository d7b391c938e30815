/**
 * A GitHub mock (OAuth app, or a GitHub App's expiring user tokens with `expiringTokens`), reproducing:
 * - https://docs.github.com/en/apps/oauth-apps/building-oauth-apps/authorizing-oauth-apps — space-delimited `scope`
 *   (unknown scopes are dropped, not refused), PKCE S256 only; the token endpoint takes client_id/client_secret as
 *   body parameters and answers `application/x-www-form-urlencoded` unless the request accepts JSON;
 * - https://docs.github.com/en/apps/oauth-apps/maintaining-oauth-apps/troubleshooting-oauth-app-access-token-request-errors
 *   — token errors with HTTP 200 (`incorrect_client_credentials`, `bad_verification_code`, `redirect_uri_mismatch`);
 * - https://docs.github.com/en/apps/creating-github-apps/authenticating-with-a-github-app/refreshing-user-access-tokens
 *   — `bad_refresh_token`, rotation;
 * - https://docs.github.com/en/rest/apps/oauth-applications#delete-an-app-token — DELETE, Basic, JSON {access_token}, 204;
 * - https://github.com/github/github-mcp-server/blob/main/docs/host-integration.md and docs/remote-server.md — the
 *   hosted MCP server (/mcp/, Streamable HTTP) requires a valid access token in the Authorization header (any valid
 *   token: it authenticates nothing itself) and has no dynamic client registration; `get_me` answers the token's user;
 * - https://docs.github.com/en/rest/users/users#get-the-authenticated-user, https://docs.github.com/en/rest/repos/repos
 *   and https://docs.github.com/en/rest/about-the-rest-api/api-versions (a User-Agent is required; an unknown
 *   X-GitHub-Api-Version is a 400).
 */
import { errorPage, expiresIn, pendingFrom, scopesOf, serveMock, type Grant, type MockCore, type MockOptions, type MockProvider, type MockRequest } from "./base.ts";

export const GITHUB_SCOPES = ["repo", "public_repo", "repo:status", "read:user", "user:email", "read:org", "gist", "notifications", "workflow"];
const API_VERSIONS = ["2022-11-28", "2026-03-10"];

export function startGitHubMock(options: MockOptions & { expiringTokens?: boolean }): MockProvider {
  const expiring = options.expiringTokens === true;
  return serveMock(
    {
      name: "GitHub",
      scopes: GITHUB_SCOPES,
      tokenPrefix: expiring ? { access: "ghu_", refresh: "ghr_" } : { access: "gho_", refresh: "ghr_" },
      defaultAccessTokenTtl: expiring ? 28800 : null,
      routes: [
        { route: "authorize", method: "GET", path: "/login/oauth/authorize", handle: authorize },
        { route: "token", method: "POST", path: "/login/oauth/access_token", handle: (req, mock) => token(req, mock, expiring) },
        { route: "revoke", method: "DELETE", path: /^\/applications\/([^/]+)\/token$/, handle: revoke },
        { route: "userinfo", method: "GET", path: "/user", handle: (req, mock) => api(req, mock, (g) => githubUser(g)) },
        { route: "api", method: "GET", path: "/user/repos", handle: (req, mock) => api(req, mock, repos) },
        { route: "mcp", method: "*", path: "/mcp/", handle: mcpServer },
      ],
    },
    options,
    (url) => ({
      authorize_endpoint: `${url}/login/oauth/authorize`,
      token_endpoint: `${url}/login/oauth/access_token`,
      api_base_url: url,
      userinfo_endpoint: `${url}/user`,
      revocation_endpoint: `${url}/applications/{client_id}/token`,
    }),
  );
}

// internal

function authorize(req: MockRequest, mock: MockCore): Response {
  const q = req.url.searchParams;
  if (q.get("client_id") !== mock.clientId) return errorPage(404, "Not Found", "No OAuth app has this client_id.");
  const state = q.get("state");
  // GitHub sends the browser to the app's registered callback with redirect_uri_mismatch.
  if (q.has("redirect_uri") && !mock.registered(q.get("redirect_uri"))) {
    return mock.authorizeError(mock.options.redirectUris[0]!, state, "redirect_uri_mismatch", "The redirect_uri MUST match the registered callback URL for this application.");
  }
  const redirectUri = q.get("redirect_uri") ?? mock.options.redirectUris[0]!;
  if (q.has("code_challenge") && q.get("code_challenge_method") !== "S256") {
    return mock.authorizeError(redirectUri, state, "invalid_request", "Only the S256 code challenge method is accepted.");
  }
  // Unknown scopes are dropped, not refused: the token response's `scope` shows what was granted.
  const scopes = scopesOf(q, "scope", " ").filter((s) => GITHUB_SCOPES.includes(s));
  return mock.consent({ ...pendingFrom(q, scopes), redirectUri });
}

function token(req: MockRequest, mock: MockCore, expiring: boolean): Response {
  const accept = req.headers.get("accept") ?? "";
  const answer = (fields: Record<string, string | number | undefined>) => {
    const defined = Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined).map(([k, v]) => [k, String(v)]));
    if (accept.includes("application/json")) return Response.json(fields);
    return new Response(new URLSearchParams(defined).toString(), { headers: { "content-type": "application/x-www-form-urlencoded; charset=utf-8" } });
  };
  const fail = (error: string, description: string) =>
    answer({ error, error_description: description, error_uri: `https://docs.github.com/apps/managing-oauth-apps/troubleshooting-oauth-app-access-token-request-errors/#${error.replaceAll("_", "-")}` });
  const body = mock.parseBody(req);
  const auth = mock.clientAuth(new Headers(), body.fields); // client_id and client_secret are body parameters
  if (!auth.valid) return fail("incorrect_client_credentials", "The client_id and/or client_secret passed are incorrect.");
  const f = body.fields;
  let grant: Grant;
  if (f.grant_type === "refresh_token") {
    const refreshed = expiring ? mock.refresh(f.refresh_token, auth.clientId, { rotate: true }) : null;
    if (!refreshed) return fail("bad_refresh_token", "The refresh token passed is incorrect or expired.");
    grant = refreshed;
  } else {
    if (f.redirect_uri !== undefined && !mock.registered(String(f.redirect_uri))) {
      return fail("redirect_uri_mismatch", "The redirect_uri MUST match the registered callback URL for this application.");
    }
    const redeemed = mock.redeem(f.code, { clientId: auth.clientId, redirectUri: f.redirect_uri ?? mock.options.redirectUris[0], verifier: f.code_verifier });
    if ("error" in redeemed) return fail("bad_verification_code", "The code passed is incorrect or expired.");
    grant = mock.issue(redeemed, { refresh: expiring });
  }
  return answer({
    access_token: grant.accessToken,
    token_type: "bearer",
    scope: grant.scopes.join(","),
    expires_in: expiresIn(grant),
    refresh_token: grant.refreshToken ?? undefined,
    refresh_token_expires_in: grant.refreshToken ? 15897600 : undefined,
  });
}

function revoke(req: MockRequest, mock: MockCore, match: string[]): Response {
  const auth = mock.clientAuth(req.headers, {});
  if (auth.via !== "basic" || !auth.valid || match[0] !== mock.clientId) {
    return Response.json({ message: "Not Found", documentation_url: "https://docs.github.com/rest/apps/oauth-applications#delete-an-app-token" }, { status: 404 });
  }
  const body = mock.parseBody(req);
  if (body.format !== "json" || typeof body.fields.access_token !== "string") {
    return Response.json({ message: "Invalid request.\n\n\"access_token\" wasn't supplied.", documentation_url: "https://docs.github.com/rest" }, { status: 422 });
  }
  if (!mock.revoke(body.fields.access_token)) return Response.json({ message: "Not Found" }, { status: 404 });
  return new Response(null, { status: 204 });
}

function api(req: MockRequest, mock: MockCore, render: (g: Grant) => unknown): Response {
  if (!req.headers.get("user-agent")) {
    return new Response("Request forbidden by administrative rules. Please make sure your request has a User-Agent header.", { status: 403 });
  }
  const version = req.headers.get("x-github-api-version");
  if (version !== null && !API_VERSIONS.includes(version)) {
    return Response.json({ message: `API version '${version}' is not supported.`, documentation_url: "https://docs.github.com/rest/about-the-rest-api/api-versions" }, { status: 400 });
  }
  const grant = mock.bearer(req.headers);
  if (!grant) return Response.json({ message: "Bad credentials", documentation_url: "https://docs.github.com/rest" }, { status: 401 });
  return Response.json(render(grant), { headers: { "x-oauth-scopes": grant.scopes.join(", ") } });
}

/** GitHub's hosted MCP server, as its documentation describes its auth: a GitHub token as Bearer, or 401. */
function mcpServer(req: MockRequest, mock: MockCore): Response {
  const grant = mock.bearer(req.headers);
  if (!grant) {
    return Response.json({ message: "Bad credentials" }, { status: 401, headers: { "www-authenticate": `Bearer error="invalid_token", resource_metadata="${mock.url}/.well-known/oauth-protected-resource/mcp/"` } });
  }
  if (req.method === "DELETE") return new Response(null, { status: 200 });
  if (req.method !== "POST") return new Response(null, { status: 405 });
  const msg = JSON.parse(req.body) as { id?: number; method: string; params?: { name?: string; protocolVersion?: string } };
  const reply = (result: unknown) => Response.json({ jsonrpc: "2.0", id: msg.id, result }, { headers: { "mcp-session-id": "gh-session-1" } });
  if (msg.id === undefined) return new Response(null, { status: 202 });
  if (msg.method === "initialize") return reply({ protocolVersion: msg.params?.protocolVersion ?? "2025-06-18", capabilities: { tools: {} }, serverInfo: { name: "github-mcp-server", version: "mock" } });
  if (msg.method === "tools/list") return reply({ tools: [{ name: "get_me", description: "Get my user profile", inputSchema: { type: "object", properties: {} } }] });
  if (msg.method === "tools/call" && msg.params?.name === "get_me") return reply({ content: [{ type: "text", text: JSON.stringify(githubUser(grant)) }] });
  return Response.json({ jsonrpc: "2.0", id: msg.id, error: { code: -32601, message: "Method not found" } });
}

function githubUser(g: Grant) {
  return { login: g.user.login, id: Number(g.user.id), type: "User", name: g.user.name, email: g.user.email };
}

function repos(g: Grant) {
  const all = [
    { id: 1, name: "hello", full_name: `${g.user.login}/hello`, private: false },
    { id: 2, name: "secret", full_name: `${g.user.login}/secret`, private: true },
  ];
  return g.scopes.includes("repo") ? all : all.filter((r) => !r.private);
}
