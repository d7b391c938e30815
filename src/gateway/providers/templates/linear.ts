/**
 * Linear. Follows:
 * - https://linear.app/developers/oauth-2-0-authentication (comma-separated scopes, PKCE, refresh tokens for every
 *   app since 2026-04-01, revoke with the token as Bearer)
 * - https://linear.app/developers/graphql (the API is one GraphQL endpoint; `viewer` is the person)
 *
 * Every call is POST /graphql, so scope_rules cannot tell read from write: each scope allows POST /graphql and
 * Linear enforces the scopes itself.
 * - https://linear.app/developers/graphql#authentication (the identity endpoint: allowed under every scope, DESIGN §11)
 */
import type { ProviderTemplate } from "./index.ts";

const GRAPHQL = ["POST /graphql"];

export const linear: ProviderTemplate = {
  id: "linear",
  docs: ["https://linear.app/developers/oauth-2-0-authentication", "https://linear.app/developers/graphql", "https://linear.app/developers/graphql#authentication"],
  quirks: [
    "identity endpoint allowed under every scope (scope_rules \"*\"): the `viewer` query (POST /graphql) is the person",
    "scopes comma-separated",
    "the user id comes from GraphQL: POST /graphql { viewer { id } }",
    "access tokens last 24 h; refresh rotates the refresh token",
    "revocation: the token itself as Bearer",
  ],
  entry: {
    display_name: "Linear",
    categories: ["developer-tools"],
    authorize_endpoint: "https://linear.app/oauth/authorize",
    token_endpoint: "https://api.linear.app/oauth/token",
    api_base_url: "https://api.linear.app",
    userinfo_endpoint: "https://api.linear.app/graphql",
    userinfo_body: { query: "{ viewer { id } }" },
    revocation_endpoint: "https://api.linear.app/oauth/revoke",
    token_endpoint_auth_method: "client_secret_post",
    scope_separator: ",",
    user_id_source: "userinfo",
    user_id_path: "data.viewer.id",
    revocation_auth: "bearer",
    available_scopes: ["read", "write", "issues:create", "comments:create"],
    scope_descriptions: {
      read: "Read your workspace: issues, projects, teams, comments.",
      write: "Change anything you can change.",
      "issues:create": "Create issues and their attachments.",
      "comments:create": "Comment on issues.",
    },
    scope_rules: { "*": GRAPHQL, read: GRAPHQL, write: GRAPHQL, "issues:create": GRAPHQL, "comments:create": GRAPHQL },
  },
};
