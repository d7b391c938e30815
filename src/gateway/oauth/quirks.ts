/**
 * The OAuth client's named quirk points (DESIGN §11): one small pure function per way a provider departs from RFC
 * 6749 / 7009 / 7636, each reading the provider's configuration and each defaulting to the RFC. client.ts composes
 * them; no other module branches on a provider. The provider templates (providers/templates/) set the fields.
 */
import type { ProviderConfig } from "../../protocol/index.ts";

export type Form = Record<string, string>;

/** A request to the provider, short of its URL: what client.ts hands to fetch. */
export interface Outgoing {
  method: string;
  headers: Record<string, string>;
  body: string | undefined;
}

// The authorization request

/** The authorize parameter carrying the scopes: `scope` (RFC 6749 §3.3), Slack's `user_scope`, or none (Notion). */
export function scopeParameter(c: ProviderConfig): string | null {
  return c.scope_param === undefined ? "scope" : c.scope_param;
}

/** The scopes asked of the provider: the agent's, then `extra_scopes` (Microsoft's offline_access, openid). */
export function upstreamScopes(c: ProviderConfig, scopes: readonly string[]): string[] {
  return [...new Set([...scopes, ...(c.extra_scopes ?? [])])];
}

/** The scope parameter's value: space-delimited (RFC 6749 §3.3) unless the provider wants commas (Slack, Linear). */
export function joinScopes(c: ProviderConfig, scopes: readonly string[]): string {
  return upstreamScopes(c, scopes).join(c.scope_separator ?? " ");
}

/** Whether the authorize and token requests carry PKCE (RFC 7636); off only where it changes the client (Slack). */
export function usesPkce(c: ProviderConfig): boolean {
  return c.pkce !== false;
}

// Requests to the token and revocation endpoints

/**
 * Client authentication (RFC 6749 §2.3.1): HTTP Basic with id and secret form-urlencoded first, or both as body
 * parameters; `bearer` (the token being revoked is the credential) and `none` add nothing.
 */
export function clientAuthentication(
  method: NonNullable<ProviderConfig["revocation_auth"]>,
  c: ProviderConfig,
  form: Form,
): { form: Form; headers: Record<string, string> } {
  if (method === "client_secret_basic") {
    const credentials = `${encodeURIComponent(c.client_id)}:${encodeURIComponent(c.client_secret)}`;
    return { form, headers: { authorization: `Basic ${Buffer.from(credentials).toString("base64")}` } };
  }
  if (method === "client_secret_post") return { form: { ...form, client_id: c.client_id, client_secret: c.client_secret }, headers: {} };
  return { form, headers: {} };
}

/** A body in the provider's format: form-encoded (RFC 6749 §4.1.3, RFC 7009 §2.1) or JSON (Notion, GitHub's revocation). */
export function encodeBody(format: "form" | "json" | undefined, form: Form): { contentType: string; body: string } {
  return format === "json"
    ? { contentType: "application/json", body: JSON.stringify(form) }
    : { contentType: "application/x-www-form-urlencoded", body: new URLSearchParams(form).toString() };
}

/**
 * A token request (code exchange or refresh): the provider's client authentication and body format. It always asks
 * for JSON — GitHub answers form-encoded otherwise — and carries the static `api_headers` (Notion-Version).
 */
export function tokenRequest(c: ProviderConfig, form: Form): Outgoing {
  const auth = clientAuthentication(c.token_endpoint_auth_method, c, form);
  const { contentType, body } = encodeBody(c.token_request_format, auth.form);
  return { method: "POST", headers: { ...apiHeaders(c), "content-type": contentType, accept: "application/json", ...auth.headers }, body };
}

/** The refresh request's form (RFC 6749 §6); `scope` is repeated where the provider requires it (Microsoft). */
export function refreshForm(c: ProviderConfig, refreshToken: string, grantScopes: readonly string[]): Form {
  const form: Form = { grant_type: "refresh_token", refresh_token: refreshToken };
  if (c.refresh_sends_scope === true) form.scope = joinScopes(c, grantScopes);
  return form;
}

// The token endpoint's answer

/**
 * The answer's fields: JSON (RFC 6749 §5.1), or form-encoded when the provider says so by Content-Type (GitHub
 * without `Accept: application/json`). Anything else is null, reported by the caller as malformed.
 */
export function readAnswer(text: string, contentType: string | null): unknown {
  if ((contentType ?? "").toLowerCase().startsWith("application/x-www-form-urlencoded")) return Object.fromEntries(new URLSearchParams(text));
  try {
    return JSON.parse(text);
  } catch {
    return null;
  }
}

/**
 * The error an answer carries, whatever its HTTP status: GitHub and Slack answer failures with 200 (`error`, and
 * Slack's `ok: false`). Null when the answer is not an error.
 */
export function answerError(payload: unknown): string | null {
  if (!isObject(payload)) return null;
  if (typeof payload.error === "string" && payload.error !== "") return payload.error.slice(0, 64);
  if (payload.ok === false) return "ok_false";
  return null;
}

/** Whether a refused token request means the grant is dead (`invalid_grant`, GitHub's `bad_refresh_token`…). */
export function isRefusedGrant(c: ProviderConfig, error: string): boolean {
  return (c.refused_grant_errors ?? ["invalid_grant"]).includes(error);
}

/**
 * Where the token fields sit: the object at `token_path` (Slack's `authed_user`) when the answer has one there, else
 * the top level (Slack answers a refresh at the top level).
 */
export function tokenFields(c: ProviderConfig, payload: unknown): unknown {
  if (c.token_path === undefined) return payload;
  const nested = valueAt(payload, c.token_path);
  return isObject(nested) ? nested : payload;
}

/**
 * A granted-scope value as RFC 6749 §3.3's space-delimited string: GitHub and Slack separate with commas, and a
 * JSON array is read as the list it is.
 */
export function normalizeScope(value: unknown): unknown {
  if (Array.isArray(value)) return value.filter((s) => typeof s === "string").join(" ");
  if (typeof value === "string") return value.split(/[\s,]+/).filter(Boolean).join(" ");
  return value;
}

// The user's id

export type UserIdSource = NonNullable<ProviderConfig["user_id_source"]>;

export function userIdSource(c: ProviderConfig): UserIdSource {
  return c.user_id_source ?? "auto";
}

/** The id at a dot path (`owner.user.id`), as a string; numbers (GitHub's `id`) are kept exactly. */
export function userIdAt(value: unknown, path: string): string | null {
  const id = valueAt(value, path);
  if (typeof id === "string" && id !== "") return id.slice(0, 256);
  if (typeof id === "number" && Number.isFinite(id)) return String(id);
  return null;
}

/** The id in a userinfo answer: `user_id_path`, else the first of `sub`, `id`, `login` (the `auto` default). */
export function userIdFromUserinfo(c: ProviderConfig, info: unknown): string | null {
  if (c.user_id_path !== undefined) return userIdAt(info, c.user_id_path);
  return userIdAt(info, "sub") ?? userIdAt(info, "id") ?? userIdAt(info, "login");
}

/** The userinfo request: a GET, or a POST of `userinfo_body` (Linear's GraphQL `{ viewer { id } }`). */
export function userinfoRequest(c: ProviderConfig, accessToken: string): Outgoing {
  const headers = { ...apiHeaders(c), accept: "application/json", authorization: `Bearer ${accessToken}` };
  if (c.userinfo_body === undefined) return { method: "GET", headers, body: undefined };
  return { method: "POST", headers: { ...headers, "content-type": "application/json" }, body: JSON.stringify(c.userinfo_body) };
}

// Calls to the provider's API

/** Static headers on every call to the provider but the browser's authorize redirect (Notion-Version). */
export function apiHeaders(c: ProviderConfig): Record<string, string> {
  return c.api_headers ?? {};
}

// Revocation

export type TokenKind = "access_token" | "refresh_token";

/**
 * Which of a grant's tokens to revoke, in order. RFC 7009 endpoints (form, client authentication) take either, so the
 * refresh token goes first (§2.1: it takes the grant's access tokens with it) and the access token after; endpoints
 * that take the token as the credential or in a JSON body (Slack, Linear, Dropbox, Notion, GitHub) take the access token.
 */
export function revocationTargets(c: ProviderConfig, hasRefreshToken: boolean): TokenKind[] {
  const rfc7009 = revocationAuth(c) !== "bearer" && c.revocation_format !== "json";
  return rfc7009 && hasRefreshToken ? ["refresh_token", "access_token"] : ["access_token"];
}

/** The revocation request for one token: URL (with `{client_id}` filled in), method, authentication and body. */
export function revocationRequest(c: ProviderConfig, token: string, hint: TokenKind): Outgoing & { url: string } {
  const url = (c.revocation_endpoint ?? "").replaceAll("{client_id}", encodeURIComponent(c.client_id));
  const method = c.revocation_method ?? "POST";
  const auth = revocationAuth(c);
  const headers: Record<string, string> = { ...apiHeaders(c), accept: "application/json" };
  if (auth === "bearer") return { url, method, headers: { ...headers, authorization: `Bearer ${token}` }, body: undefined };
  const base: Form = { [c.revocation_token_param ?? "token"]: token };
  // token_type_hint is RFC 7009's, for its form bodies; JSON endpoints validate their bodies strictly.
  if (c.revocation_format !== "json") base.token_type_hint = hint;
  const signed = clientAuthentication(auth, c, base);
  const { contentType, body } = encodeBody(c.revocation_format, signed.form);
  return { url, method, headers: { ...headers, "content-type": contentType, ...signed.headers }, body };
}

/**
 * Whether the provider revoked the token: a 2xx without an error in the body (Slack answers `ok: false` with 200),
 * or the provider saying the token is already invalid (Google's 400 `invalid_token`; RFC 7009 §2.2 would say 200).
 */
export function revocationSucceeded(status: number, payload: unknown): boolean {
  const error = answerError(payload);
  if (status >= 200 && status < 300) return error === null;
  return status === 400 && error === "invalid_token";
}

// internal

function revocationAuth(c: ProviderConfig): NonNullable<ProviderConfig["revocation_auth"]> {
  return c.revocation_auth ?? c.token_endpoint_auth_method;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function valueAt(value: unknown, path: string): unknown {
  let v = value;
  for (const key of path.split(".")) {
    if (!isObject(v) || !Object.hasOwn(v, key)) return undefined;
    v = v[key];
  }
  return v;
}
