/**
 * Dropbox. Follows:
 * - https://developers.dropbox.com/oauth-guide (scopes, PKCE, token_access_type=offline)
 * - https://www.dropbox.com/developers/documentation/http/documentation#oauth2-authorize and #oauth2-token
 * - https://www.dropbox.com/developers/documentation/http/documentation#auth-token-revoke (Bearer, no body)
 * - https://dropbox.tech/developers/using-oauth-2-0-with-offline-access (4 h access tokens, refresh not rotated)
 *
 * api_base_url is the RPC host; the content endpoints (download, upload) live on content.dropboxapi.com and need a
 * second entry with that api_base_url.
 * - https://www.dropbox.com/developers/documentation/http/documentation#users-get_current_account (the identity endpoint: allowed under every scope, DESIGN §11)
 */
import type { ProviderTemplate } from "./index.ts";

export const dropbox: ProviderTemplate = {
  id: "dropbox",
  docs: [
    "https://developers.dropbox.com/oauth-guide",
    "https://www.dropbox.com/developers/documentation/http/documentation",
    "https://dropbox.tech/developers/using-oauth-2-0-with-offline-access",
    "https://www.dropbox.com/developers/documentation/http/documentation#users-get_current_account",
  ],
  quirks: [
    "identity endpoint allowed under every scope (scope_rules \"*\"): users/get_current_account: account_info.read is on every app",
    "a refresh token only with token_access_type=offline; refresh does not rotate it",
    "the user id is account_id in the token response",
    "every API call is a POST (RPC); content endpoints live on another host",
    "revocation: POST /2/auth/token/revoke with the token as Bearer",
  ],
  entry: {
    display_name: "Dropbox",
    categories: ["storage"],
    authorize_endpoint: "https://www.dropbox.com/oauth2/authorize",
    token_endpoint: "https://api.dropboxapi.com/oauth2/token",
    api_base_url: "https://api.dropboxapi.com/2",
    revocation_endpoint: "https://api.dropboxapi.com/2/auth/token/revoke",
    token_endpoint_auth_method: "client_secret_basic",
    extra_authorize_params: { token_access_type: "offline" },
    user_id_source: "token_response",
    user_id_path: "account_id",
    revocation_auth: "bearer",
    available_scopes: [
      "account_info.read", "files.metadata.read", "files.metadata.write", "files.content.read", "files.content.write",
      "sharing.read", "sharing.write",
    ],
    scope_descriptions: {
      "account_info.read": "See your account name, email and space usage.",
      "files.metadata.read": "List files and folders and see their details.",
      "files.metadata.write": "Create, move, copy and delete files and folders.",
      "files.content.read": "Get links to read file contents.",
      "files.content.write": "Get links to upload files; save files from URLs.",
      "sharing.read": "See shared folders and links.",
      "sharing.write": "Share folders and create or revoke shared links.",
    },
    scope_rules: {
      // what the provider grants every token: its identity endpoint (https://www.dropbox.com/developers/documentation/http/documentation#users-get_current_account)
      "*": ["POST /users/get_current_account"],
      "account_info.read": ["POST /users/get_current_account", "POST /users/get_space_usage"],
      "files.metadata.read": [
        "POST /files/list_folder", "POST /files/list_folder/continue", "POST /files/get_metadata",
        "POST /files/search_v2", "POST /files/search/continue_v2", "POST /files/list_revisions",
      ],
      "files.metadata.write": ["POST /files/create_folder_v2", "POST /files/delete_v2", "POST /files/move_v2", "POST /files/copy_v2"],
      "files.content.read": ["POST /files/get_temporary_link"],
      "files.content.write": ["POST /files/get_temporary_upload_link", "POST /files/save_url"],
      "sharing.read": ["POST /sharing/list_folders", "POST /sharing/list_folders/continue", "POST /sharing/list_shared_links", "POST /sharing/get_shared_link_metadata"],
      "sharing.write": ["POST /sharing/share_folder", "POST /sharing/create_shared_link_with_settings", "POST /sharing/revoke_shared_link"],
    },
  },
};
