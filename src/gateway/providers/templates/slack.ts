/**
 * Slack (OAuth v2, acting as you with a user token). Follows:
 * - https://docs.slack.dev/authentication/installing-with-oauth (user_scope, authed_user)
 * - https://docs.slack.dev/reference/methods/oauth.v2.access (Basic preferred; errors are HTTP 200 {ok:false})
 * - https://docs.slack.dev/authentication/using-token-rotation (refresh: the user token at the top level)
 * - https://docs.slack.dev/authentication/using-pkce (turning PKCE on makes the app public, one-way)
 * - https://docs.slack.dev/reference/methods/auth.revoke
 * - https://docs.slack.dev/reference/scopes
 * - https://docs.slack.dev/reference/methods/auth.test (the identity endpoint: allowed under every scope, DESIGN §11)
 */
import type { ProviderTemplate } from "./index.ts";

const READ_CONVERSATIONS = ["* /conversations.list", "* /conversations.info", "* /conversations.members"];
const READ_HISTORY = ["* /conversations.history", "* /conversations.replies"];

export const slack: ProviderTemplate = {
  id: "slack",
  docs: [
    "https://docs.slack.dev/authentication/installing-with-oauth",
    "https://docs.slack.dev/reference/methods/oauth.v2.access",
    "https://docs.slack.dev/authentication/using-token-rotation",
    "https://docs.slack.dev/reference/methods/auth.revoke",
    "https://docs.slack.dev/reference/methods/auth.test",
  ],
  quirks: [
    "identity endpoint allowed under every scope (scope_rules \"*\"): auth.test needs no scope",
    "user scopes go in user_scope, comma-separated",
    "the user token sits under authed_user (and the user id at authed_user.id); refresh answers at the top level",
    "errors come with HTTP 200 and ok:false",
    "PKCE off: enabling it turns the app into a public client for good",
    "revocation: auth.revoke with the token as Bearer",
  ],
  entry: {
    display_name: "Slack",
    categories: ["communication"],
    authorize_endpoint: "https://slack.com/oauth/v2/authorize",
    token_endpoint: "https://slack.com/api/oauth.v2.access",
    api_base_url: "https://slack.com/api",
    revocation_endpoint: "https://slack.com/api/auth.revoke",
    token_endpoint_auth_method: "client_secret_basic",
    scope_param: "user_scope",
    scope_separator: ",",
    token_path: "authed_user",
    user_id_source: "token_response",
    user_id_path: "authed_user.id",
    pkce: false,
    refused_grant_errors: ["invalid_refresh_token", "invalid_grant"],
    revocation_auth: "bearer",
    available_scopes: [
      "channels:read", "channels:history", "groups:read", "groups:history", "im:read", "im:history",
      "chat:write", "users:read", "users:read.email", "search:read", "reactions:read", "reactions:write", "files:read",
    ],
    scope_descriptions: {
      "channels:read": "See the public channels you can see.",
      "channels:history": "Read messages in your public channels.",
      "groups:read": "See the private channels you are in.",
      "groups:history": "Read messages in your private channels.",
      "im:read": "See your direct messages list.",
      "im:history": "Read your direct messages.",
      "chat:write": "Send, edit and delete messages as you.",
      "users:read": "See the people in the workspace.",
      "users:read.email": "Look people up by email address.",
      "search:read": "Search the workspace's messages and files as you.",
      "reactions:read": "See emoji reactions.",
      "reactions:write": "Add and remove emoji reactions as you.",
      "files:read": "See the files you can see.",
    },
    scope_rules: {
      // what the provider grants every token: its identity endpoint (https://docs.slack.dev/reference/methods/auth.test)
      "*": ["GET /auth.test", "POST /auth.test"],
      "channels:read": READ_CONVERSATIONS,
      "channels:history": READ_HISTORY,
      "groups:read": READ_CONVERSATIONS,
      "groups:history": READ_HISTORY,
      "im:read": READ_CONVERSATIONS,
      "im:history": READ_HISTORY,
      "chat:write": ["POST /chat.postMessage", "POST /chat.update", "POST /chat.delete", "POST /chat.scheduleMessage"],
      "users:read": ["* /users.list", "* /users.info", "* /users.getPresence", "* /auth.test"],
      "users:read.email": ["* /users.lookupByEmail"],
      "search:read": ["* /search.messages", "* /search.files", "* /search.all"],
      "reactions:read": ["* /reactions.get", "* /reactions.list"],
      "reactions:write": ["POST /reactions.add", "POST /reactions.remove"],
      "files:read": ["* /files.list", "* /files.info"],
    },
  },
};
