/**
 * Notion (public integration). Follows:
 * - https://developers.notion.com/docs/authorization (owner=user, no scopes: capabilities live on the integration)
 * - https://developers.notion.com/reference/create-a-token · https://developers.notion.com/reference/refresh-a-token
 *   (HTTP Basic + JSON body; owner.user.id)
 * - https://developers.notion.com/reference/revoke-token (Basic + JSON {token})
 * - https://developers.notion.com/reference/versioning (Notion-Version on every request; latest 2025-09-03)
 * - https://developers.notion.com/reference/capabilities
 *
 * Notion has no OAuth scopes, so the scopes here are the gateway's own names for the integration's capabilities,
 * enforced by scope_rules: an agent approved for read_content cannot write even though the token could.
 * - https://developers.notion.com/reference/get-self (the identity endpoint: allowed under every scope, DESIGN §11)
 */
import type { ProviderTemplate } from "./index.ts";

export const notion: ProviderTemplate = {
  id: "notion",
  docs: [
    "https://developers.notion.com/docs/authorization",
    "https://developers.notion.com/reference/create-a-token",
    "https://developers.notion.com/reference/revoke-token",
    "https://developers.notion.com/reference/versioning",
    "https://developers.notion.com/reference/get-self",
  ],
  quirks: [
    "identity endpoint allowed under every scope (scope_rules \"*\"): GET /users/me is the token's bot user and its owner",
    "token requests are JSON with HTTP Basic client authentication",
    "no OAuth scopes: the gateway's scopes are enforced by scope_rules alone",
    "Notion-Version: 2025-09-03 on every API call",
    "the user id is owner.user.id in the token response; owner=user on authorize; no PKCE (not documented)",
    "revocation: JSON {token} with HTTP Basic",
  ],
  entry: {
    display_name: "Notion",
    categories: ["productivity"],
    authorize_endpoint: "https://api.notion.com/v1/oauth/authorize",
    token_endpoint: "https://api.notion.com/v1/oauth/token",
    api_base_url: "https://api.notion.com/v1",
    revocation_endpoint: "https://api.notion.com/v1/oauth/revoke",
    token_endpoint_auth_method: "client_secret_basic",
    token_request_format: "json",
    scope_param: null,
    // Notion documents no PKCE, and its JSON bodies are validated strictly: no code_verifier is sent.
    pkce: false,
    extra_authorize_params: { owner: "user" },
    user_id_source: "token_response",
    user_id_path: "owner.user.id",
    api_headers: { "Notion-Version": "2025-09-03" },
    revocation_format: "json",
    available_scopes: ["read_content", "update_content", "insert_content", "read_comments", "insert_comments", "read_users"],
    scope_descriptions: {
      read_content: "Read the pages, databases and blocks shared with the integration; search them.",
      update_content: "Edit existing pages, blocks and databases.",
      insert_content: "Create pages and databases, append blocks, upload files.",
      read_comments: "Read comments.",
      insert_comments: "Add comments.",
      read_users: "See the workspace's people.",
    },
    scope_rules: {
      // what the provider grants every token: its identity endpoint (https://developers.notion.com/reference/get-self)
      "*": ["GET /users/me"],
      read_content: [
        "GET /pages/**", "GET /blocks/**", "GET /databases/**", "POST /databases/*/query",
        "GET /data_sources/**", "POST /data_sources/*/query", "POST /search",
      ],
      update_content: ["PATCH /pages/**", "PATCH /blocks/**", "DELETE /blocks/*", "PATCH /databases/*", "PATCH /data_sources/*"],
      insert_content: ["POST /pages", "PATCH /blocks/*/children", "POST /databases", "POST /data_sources", "POST /file_uploads/**"],
      read_comments: ["GET /comments"],
      insert_comments: ["POST /comments"],
      read_users: ["GET /users/**"],
    },
  },
};
