/**
 * GitLab (gitlab.com; self-managed instances override the four URLs). Follows:
 * - https://docs.gitlab.com/api/oauth2/ (authorization code with PKCE, refresh, revoke)
 * - https://docs.gitlab.com/integration/oauth_provider/ (scopes)
 * - https://docs.gitlab.com/integration/openid_connect_provider/ (id_token, userinfo)
 * - https://gitlab.com/gitlab-org/gitlab/-/issues/372358 (a refresh invalidates the old access and refresh tokens)
 * - https://docs.gitlab.com/api/users/#retrieve-the-current-user (the identity endpoint: allowed under every scope, DESIGN §11)
 */
import type { ProviderTemplate } from "./index.ts";

export const gitlab: ProviderTemplate = {
  id: "gitlab",
  docs: ["https://docs.gitlab.com/api/oauth2/", "https://docs.gitlab.com/integration/oauth_provider/", "https://docs.gitlab.com/api/users/#retrieve-the-current-user"],
  quirks: [
    "identity endpoint allowed under every scope (scope_rules \"*\"): GET /user is the current user",
    "access tokens last 2 h; every refresh rotates both tokens",
    "openid always asked: the user id is the id_token sub",
    "project ids must be numeric through the proxy (group%2Fproject is an encoded slash, refused)",
  ],
  entry: {
    display_name: "GitLab",
    categories: ["developer-tools"],
    authorize_endpoint: "https://gitlab.com/oauth/authorize",
    token_endpoint: "https://gitlab.com/oauth/token",
    api_base_url: "https://gitlab.com/api/v4",
    userinfo_endpoint: "https://gitlab.com/oauth/userinfo",
    revocation_endpoint: "https://gitlab.com/oauth/revoke",
    token_endpoint_auth_method: "client_secret_post",
    extra_scopes: ["openid"],
    user_id_source: "id_token",
    available_scopes: ["read_user", "read_api", "api", "read_repository"],
    scope_descriptions: {
      read_user: "Read your profile (/user) and public user data.",
      read_api: "Read everything you can see through the API: projects, groups, issues, merge requests.",
      api: "Full read and write API access as you, including groups and projects.",
      read_repository: "Read repository files of private projects.",
    },
    scope_rules: {
      // what the provider grants every token: its identity endpoint (https://docs.gitlab.com/api/users/#retrieve-the-current-user)
      "*": ["GET /user"],
      read_user: ["GET /user/**", "GET /users/**"],
      read_api: ["GET /**"],
      api: ["* /**"],
      read_repository: ["GET /projects/*/repository/**"],
    },
  },
};
