/**
 * Google APIs (Gmail, Drive, Calendar) as you. Follows:
 * - https://developers.google.com/identity/protocols/oauth2/web-server (access_type=offline, prompt, PKCE, revoke)
 * - https://developers.google.com/identity/openid-connect/openid-connect (id_token sub, userinfo)
 * - https://developers.google.com/identity/protocols/oauth2/scopes
 * - https://developers.google.com/workspace/gmail/api/reference/rest · https://developers.google.com/workspace/drive/api/reference/rest/v3
 *   · https://developers.google.com/workspace/calendar/api/v3/reference
 * - https://developers.google.com/identity/openid-connect/openid-connect#obtaininguserprofileinformation (the identity endpoint: allowed under every scope, DESIGN §11)
 */
import type { ProviderTemplate } from "./index.ts";

const G = "https://www.googleapis.com/auth/";

export const google: ProviderTemplate = {
  id: "google",
  docs: [
    "https://developers.google.com/identity/protocols/oauth2/web-server",
    "https://developers.google.com/identity/openid-connect/openid-connect",
    "https://developers.google.com/identity/protocols/oauth2/scopes",
    "https://developers.google.com/identity/openid-connect/openid-connect#obtaininguserprofileinformation",
  ],
  quirks: [
    "identity endpoint allowed under every scope (scope_rules \"*\"): GET /oauth2/v3/userinfo (the OpenID Connect userinfo) is the person",
    "a refresh token only with access_type=offline, and again on re-consent only with prompt=consent",
    "openid always asked: the user id is the id_token sub",
    "the person may untick scopes: the granted ones come back in the token response",
    "revocation takes the token alone (no client authentication); refresh does not rotate",
  ],
  entry: {
    display_name: "Google",
    categories: ["productivity"],
    authorize_endpoint: "https://accounts.google.com/o/oauth2/v2/auth",
    token_endpoint: "https://oauth2.googleapis.com/token",
    api_base_url: "https://www.googleapis.com",
    userinfo_endpoint: "https://openidconnect.googleapis.com/v1/userinfo",
    revocation_endpoint: "https://oauth2.googleapis.com/revoke",
    token_endpoint_auth_method: "client_secret_post",
    // Every agent shares the gateway's client, so a second grant for the same person gets a refresh token only
    // when Google asks again. include_granted_scopes stays off: it would merge other agents' scopes into this token.
    extra_authorize_params: { access_type: "offline", prompt: "consent" },
    extra_scopes: ["openid"],
    user_id_source: "id_token",
    revocation_auth: "none",
    available_scopes: [
      `${G}gmail.readonly`, `${G}gmail.send`, `${G}gmail.modify`,
      `${G}drive.readonly`, `${G}drive.file`,
      `${G}calendar.readonly`, `${G}calendar.events`,
      "email", "profile",
    ],
    scope_descriptions: {
      [`${G}gmail.readonly`]: "Read Gmail messages, threads, labels and settings.",
      [`${G}gmail.send`]: "Send email as you.",
      [`${G}gmail.modify`]: "Read, compose, send and label Gmail messages (no permanent deletion).",
      [`${G}drive.readonly`]: "See and download every Google Drive file.",
      [`${G}drive.file`]: "Only the Drive files this app created or you opened with it.",
      [`${G}calendar.readonly`]: "See calendars and events.",
      [`${G}calendar.events`]: "View and edit events on every calendar.",
      email: "See your primary email address.",
      profile: "See your name and picture.",
    },
    scope_rules: {
      // what the provider grants every token: its identity endpoint (https://developers.google.com/identity/openid-connect/openid-connect#obtaininguserprofileinformation)
      "*": ["GET /oauth2/v3/userinfo"],
      [`${G}gmail.readonly`]: ["GET /gmail/v1/users/**"],
      [`${G}gmail.send`]: ["POST /gmail/v1/users/*/messages/send", "POST /upload/gmail/v1/users/*/messages/send"],
      [`${G}gmail.modify`]: ["* /gmail/v1/users/**", "POST /upload/gmail/v1/users/**"],
      [`${G}drive.readonly`]: ["GET /drive/v3/**"],
      [`${G}drive.file`]: ["* /drive/v3/files/**", "POST /upload/drive/v3/files", "PATCH /upload/drive/v3/files/*"],
      [`${G}calendar.readonly`]: ["GET /calendar/v3/**"],
      [`${G}calendar.events`]: ["* /calendar/v3/calendars/*/events/**", "GET /calendar/v3/users/me/calendarList/**"],
      email: ["GET /oauth2/v3/userinfo"],
      profile: ["GET /oauth2/v3/userinfo"],
    },
  },
};
