/**
 * GitHub (OAuth app). Follows:
 * - https://docs.github.com/en/apps/oauth-apps/building-oauth-apps/authorizing-oauth-apps (web application flow)
 * - https://docs.github.com/en/apps/oauth-apps/maintaining-oauth-apps/troubleshooting-oauth-app-access-token-request-errors
 * - https://docs.github.com/en/apps/oauth-apps/building-oauth-apps/scopes-for-oauth-apps
 * - https://docs.github.com/en/rest/apps/oauth-applications#delete-an-app-token
 * - https://docs.github.com/en/rest/users/users#get-the-authenticated-user (the identity endpoint: allowed under every scope, DESIGN §11)
 * - https://docs.github.com/en/rest/about-the-rest-api/api-versions
 * - https://github.blog/changelog/2025-07-14-pkce-support-for-oauth-and-github-app-authentication (S256 only)
 */
import type { ProviderTemplate } from "./index.ts";

export const github: ProviderTemplate = {
  id: "github",
  docs: [
    "https://docs.github.com/en/apps/oauth-apps/building-oauth-apps/authorizing-oauth-apps",
    "https://docs.github.com/en/apps/oauth-apps/building-oauth-apps/scopes-for-oauth-apps",
    "https://docs.github.com/en/rest/apps/oauth-applications#delete-an-app-token",
    "https://docs.github.com/en/rest/users/users#get-the-authenticated-user",
  ],
  quirks: [
    "identity endpoint allowed under every scope (scope_rules \"*\"): GET /user answers for every token (public profile without read:user)",
    "token endpoint answers form-encoded unless asked for JSON; errors come with HTTP 200",
    "granted scopes come back comma-separated (repo,gist)",
    "user id from GET /user (id); OAuth-app tokens do not expire (no refresh token)",
    "revocation: DELETE /applications/{client_id}/token, Basic auth, JSON {access_token}",
    "X-GitHub-Api-Version: 2022-11-28 on every API call",
  ],
  entry: {
    display_name: "GitHub",
    categories: ["developer-tools"],
    authorize_endpoint: "https://github.com/login/oauth/authorize",
    token_endpoint: "https://github.com/login/oauth/access_token",
    api_base_url: "https://api.github.com",
    userinfo_endpoint: "https://api.github.com/user",
    revocation_endpoint: "https://api.github.com/applications/{client_id}/token",
    // The web flow takes client_id and client_secret as body parameters.
    token_endpoint_auth_method: "client_secret_post",
    user_id_source: "userinfo",
    user_id_path: "id",
    api_headers: { "X-GitHub-Api-Version": "2022-11-28" },
    // GitHub Apps with expiring user tokens answer a dead refresh token with bad_refresh_token.
    refused_grant_errors: ["bad_refresh_token", "invalid_grant"],
    revocation_auth: "client_secret_basic",
    revocation_format: "json",
    revocation_method: "DELETE",
    revocation_token_param: "access_token",
    available_scopes: ["repo", "public_repo", "repo:status", "read:user", "user:email", "read:org", "gist", "notifications", "workflow"],
    scope_descriptions: {
      repo: "Full access to public and private repositories: code, issues, pull requests, settings.",
      public_repo: "Read and write public repositories only.",
      "repo:status": "Read and write commit statuses.",
      "read:user": "Read your profile.",
      "user:email": "Read your email addresses.",
      "read:org": "Read organization membership, teams and projects.",
      gist: "Create and edit gists.",
      notifications: "Read notifications, mark them read, watch and unwatch repositories.",
      workflow: "Add and update GitHub Actions workflow files.",
    },
    scope_rules: {
      // what the provider grants every token: its identity endpoint (https://docs.github.com/en/rest/users/users#get-the-authenticated-user)
      "*": ["GET /user"],
      repo: ["* /repos/**", "* /user/repos", "GET /user/issues", "* /user/starred/**", "GET /search/**"],
      public_repo: ["* /repos/**", "* /user/repos", "GET /user/issues", "* /user/starred/**", "GET /search/**"],
      "repo:status": ["GET /repos/*/*/commits/*/status", "GET /repos/*/*/commits/*/statuses", "* /repos/*/*/statuses/*"],
      "read:user": ["GET /user", "GET /users/**"],
      "user:email": ["GET /user/emails", "GET /user/public_emails"],
      "read:org": ["GET /user/orgs", "GET /user/teams", "GET /user/memberships/orgs/**", "GET /orgs/**"],
      gist: ["* /gists/**"],
      notifications: ["* /notifications/**", "* /repos/*/*/notifications", "* /repos/*/*/subscription"],
      workflow: ["* /repos/*/*/actions/**"],
    },
  },
};
