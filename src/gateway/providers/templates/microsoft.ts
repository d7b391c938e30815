/**
 * Microsoft (identity platform v2, work/school and personal accounts) for Microsoft Graph. Follows:
 * - https://learn.microsoft.com/en-us/entra/identity-platform/v2-oauth2-auth-code-flow (code, PKCE, refresh, errors)
 * - https://learn.microsoft.com/en-us/entra/identity-platform/scopes-oidc#the-offline_access-scope
 * - https://learn.microsoft.com/en-us/entra/identity-platform/id-token-claims-reference (sub)
 * - https://learn.microsoft.com/en-us/graph/permissions-reference
 * - https://learn.microsoft.com/en-us/graph/api/user-get (the identity endpoint: allowed under every scope, DESIGN §11)
 */
import type { ProviderTemplate } from "./index.ts";

export const microsoft: ProviderTemplate = {
  id: "microsoft",
  docs: [
    "https://learn.microsoft.com/en-us/entra/identity-platform/v2-oauth2-auth-code-flow",
    "https://learn.microsoft.com/en-us/entra/identity-platform/scopes-oidc",
    "https://learn.microsoft.com/en-us/graph/permissions-reference",
    "https://learn.microsoft.com/en-us/graph/api/user-get",
  ],
  quirks: [
    "identity endpoint allowed under every scope (scope_rules \"*\"): GET /me is the signed-in user",
    "offline_access always asked (no refresh token without it); it never comes back in the granted scopes",
    "openid always asked: the user id is the id_token sub",
    "refresh repeats the scopes (documented as required) and rotates the refresh token",
    "no per-grant revocation endpoint",
  ],
  entry: {
    display_name: "Microsoft",
    categories: ["productivity"],
    // `common` takes work, school and personal accounts; single-tenant apps override with their tenant id.
    authorize_endpoint: "https://login.microsoftonline.com/common/oauth2/v2.0/authorize",
    token_endpoint: "https://login.microsoftonline.com/common/oauth2/v2.0/token",
    api_base_url: "https://graph.microsoft.com/v1.0",
    userinfo_endpoint: "https://graph.microsoft.com/oidc/userinfo",
    token_endpoint_auth_method: "client_secret_post",
    extra_scopes: ["openid", "offline_access"],
    user_id_source: "id_token",
    refresh_sends_scope: true,
    available_scopes: ["User.Read", "Mail.Read", "Mail.Send", "Calendars.Read", "Calendars.ReadWrite", "Files.Read", "Files.ReadWrite", "Contacts.Read"],
    scope_descriptions: {
      "User.Read": "Sign in and read your profile.",
      "Mail.Read": "Read your mail.",
      "Mail.Send": "Send mail as you.",
      "Calendars.Read": "Read your calendars and events.",
      "Calendars.ReadWrite": "Read, create, change and delete your events.",
      "Files.Read": "Read your OneDrive files.",
      "Files.ReadWrite": "Read, create, change and delete your OneDrive files.",
      "Contacts.Read": "Read your contacts.",
    },
    scope_rules: {
      // what the provider grants every token: its identity endpoint (https://learn.microsoft.com/en-us/graph/api/user-get)
      "*": ["GET /me"],
      "User.Read": ["GET /me", "GET /me/photo/**"],
      "Mail.Read": ["GET /me/messages/**", "GET /me/mailFolders/**"],
      "Mail.Send": ["POST /me/sendMail", "POST /me/messages/*/send", "POST /me/messages/*/reply", "POST /me/messages/*/forward"],
      "Calendars.Read": ["GET /me/events/**", "GET /me/calendar/**", "GET /me/calendars/**", "GET /me/calendarView"],
      "Calendars.ReadWrite": ["* /me/events/**", "* /me/calendar/**", "* /me/calendars/**", "GET /me/calendarView"],
      "Files.Read": ["GET /me/drive/**", "GET /drives/**"],
      "Files.ReadWrite": ["* /me/drive/**", "* /drives/**"],
      "Contacts.Read": ["GET /me/contacts/**", "GET /me/contactFolders/**"],
    },
  },
};
