/** The OAuth client's quirk points (DESIGN §11): each defaults to the RFC and does what the provider config says. */
import { describe, expect, test } from "bun:test";
import { ProviderConfig, type ProviderConfigInput } from "../../../../src/protocol/index.ts";
import {
  answerError,
  apiHeaders,
  isRefusedGrant,
  joinScopes,
  normalizeScope,
  readAnswer,
  refreshForm,
  revocationRequest,
  revocationSucceeded,
  revocationTargets,
  scopeParameter,
  tokenFields,
  tokenRequest,
  upstreamScopes,
  userIdAt,
  userIdFromUserinfo,
  userinfoRequest,
  usesPkce,
} from "../../../../src/gateway/oauth/quirks.ts";

const BASE: ProviderConfigInput = {
  display_name: "P",
  available_scopes: ["a", "b"],
  authorize_endpoint: "https://p.example/authorize",
  token_endpoint: "https://p.example/token",
  client_id: "id:1",
  client_secret: "s&2",
};
const config = (over: Partial<ProviderConfigInput> = {}) => ProviderConfig.parse({ ...BASE, ...over });
const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString("base64")}`;

describe("the authorization request", () => {
  test("scopes go in `scope`, space-delimited (RFC 6749 §3.3), unless the provider says otherwise", () => {
    expect(scopeParameter(config())).toBe("scope");
    expect(joinScopes(config(), ["a", "b"])).toBe("a b");
    expect(scopeParameter(config({ scope_param: "user_scope" }))).toBe("user_scope");
    expect(joinScopes(config({ scope_separator: "," }), ["a", "b"])).toBe("a,b");
    expect(scopeParameter(config({ scope_param: null }))).toBeNull();
  });
  test("extra_scopes are always asked, once, after the agent's", () => {
    const c = config({ extra_scopes: ["openid", "offline_access"] });
    expect(upstreamScopes(c, ["User.Read", "openid"])).toEqual(["User.Read", "openid", "offline_access"]);
    expect(joinScopes(c, ["User.Read"])).toBe("User.Read openid offline_access");
  });
  test("PKCE is on unless turned off", () => {
    expect(usesPkce(config())).toBe(true);
    expect(usesPkce(config({ pkce: false }))).toBe(false);
  });
});

describe("token requests", () => {
  test("default: form body with client_id and client_secret, asking for JSON (RFC 6749 §2.3.1, §4.1.3)", () => {
    const r = tokenRequest(config(), { grant_type: "authorization_code", code: "c" });
    expect(r.method).toBe("POST");
    expect(r.headers).toEqual({ "content-type": "application/x-www-form-urlencoded", accept: "application/json" });
    expect(Object.fromEntries(new URLSearchParams(r.body))).toEqual({ grant_type: "authorization_code", code: "c", client_id: "id:1", client_secret: "s&2" });
  });
  test("client_secret_basic: id and secret form-urlencoded, then base64, and not in the body", () => {
    const r = tokenRequest(config({ token_endpoint_auth_method: "client_secret_basic" }), { code: "c" });
    expect(r.headers.authorization).toBe(basic("id:1", "s&2"));
    expect(r.body).toBe("code=c");
  });
  test("token_request_format json sends a JSON body (Notion), with the static api_headers", () => {
    const r = tokenRequest(config({ token_request_format: "json", token_endpoint_auth_method: "client_secret_basic", api_headers: { "Notion-Version": "2025-09-03" } }), { code: "c" });
    expect(r.headers["content-type"]).toBe("application/json");
    expect(r.headers["Notion-Version"]).toBe("2025-09-03");
    expect(JSON.parse(r.body!)).toEqual({ code: "c" });
  });
  test("a refresh repeats the grant's scopes (with extra_scopes) only where the provider requires it", () => {
    expect(refreshForm(config(), "rt", ["a"])).toEqual({ grant_type: "refresh_token", refresh_token: "rt" });
    expect(refreshForm(config({ refresh_sends_scope: true, extra_scopes: ["offline_access"] }), "rt", ["a"])).toEqual({
      grant_type: "refresh_token",
      refresh_token: "rt",
      scope: "a offline_access",
    });
  });
});

describe("token answers", () => {
  test("JSON is read as JSON; a form-encoded answer by its Content-Type (GitHub without Accept: JSON)", () => {
    expect(readAnswer('{"access_token":"x"}', "application/json")).toEqual({ access_token: "x" });
    expect(readAnswer("access_token=gho_x&scope=repo%2Cgist&token_type=bearer", "application/x-www-form-urlencoded; charset=utf-8")).toEqual({
      access_token: "gho_x",
      scope: "repo,gist",
      token_type: "bearer",
    });
    expect(readAnswer("<html>", "text/html")).toBeNull();
  });
  test("an error is an error whatever the status: `error` (GitHub's 200s) or Slack's ok:false", () => {
    expect(answerError({ error: "bad_verification_code", error_description: "x" })).toBe("bad_verification_code");
    expect(answerError({ ok: false, error: "invalid_code" })).toBe("invalid_code");
    expect(answerError({ ok: false })).toBe("ok_false");
    expect(answerError({ ok: true, access_token: "x" })).toBeNull();
    expect(answerError({ access_token: "x" })).toBeNull();
    expect(answerError(null)).toBeNull();
  });
  test("a refused grant is invalid_grant, or the provider's own codes when it lists them", () => {
    expect(isRefusedGrant(config(), "invalid_grant")).toBe(true);
    expect(isRefusedGrant(config(), "invalid_client")).toBe(false);
    const gh = config({ refused_grant_errors: ["bad_refresh_token"] });
    expect(isRefusedGrant(gh, "bad_refresh_token")).toBe(true);
    expect(isRefusedGrant(gh, "invalid_grant")).toBe(false);
  });
  test("the token fields sit at token_path when the answer has an object there, else at the top level (Slack)", () => {
    const slack = config({ token_path: "authed_user" });
    const exchange = { ok: true, authed_user: { id: "U1", access_token: "xoxp" }, team: { id: "T" } };
    const refresh = { ok: true, access_token: "xoxe.xoxp", token_type: "user" };
    expect(tokenFields(slack, exchange)).toEqual({ id: "U1", access_token: "xoxp" });
    expect(tokenFields(slack, refresh)).toBe(refresh);
    expect(tokenFields(config(), exchange)).toBe(exchange);
  });
  test("granted scopes become space-delimited whatever the provider's separator or shape", () => {
    expect(normalizeScope("repo,gist")).toBe("repo gist");
    expect(normalizeScope("read write")).toBe("read write");
    expect(normalizeScope(["read", "write", 3])).toBe("read write");
    expect(normalizeScope(" a ,  b ")).toBe("a b");
    expect(normalizeScope(undefined)).toBeUndefined();
  });
});

describe("the user's id", () => {
  test("a dot path into the answer; numbers kept exactly, anything else is no id", () => {
    const answer = { authed_user: { id: "U1" }, owner: { user: { id: "u-2" } }, id: 42, data: { viewer: { id: "v" } }, weird: { id: {} } };
    expect(userIdAt(answer, "authed_user.id")).toBe("U1");
    expect(userIdAt(answer, "owner.user.id")).toBe("u-2");
    expect(userIdAt(answer, "id")).toBe("42");
    expect(userIdAt(answer, "data.viewer.id")).toBe("v");
    expect(userIdAt(answer, "weird.id")).toBeNull();
    expect(userIdAt(answer, "missing.id")).toBeNull();
    expect(userIdAt(answer, "constructor")).toBeNull();
  });
  test("userinfo: user_id_path when set, else sub, id, login", () => {
    expect(userIdFromUserinfo(config(), { login: "octo", id: 7 })).toBe("7");
    expect(userIdFromUserinfo(config(), { sub: "s", id: 7 })).toBe("s");
    expect(userIdFromUserinfo(config({ user_id_path: "data.viewer.id", user_id_source: "userinfo", userinfo_endpoint: "https://p/u" }), { data: { viewer: { id: "v" } } })).toBe("v");
  });
  test("the userinfo request is a GET with the token, or a POST of userinfo_body (Linear GraphQL)", () => {
    expect(userinfoRequest(config({ api_headers: { "X-GitHub-Api-Version": "2022-11-28" } }), "tok")).toEqual({
      method: "GET",
      headers: { "X-GitHub-Api-Version": "2022-11-28", accept: "application/json", authorization: "Bearer tok" },
      body: undefined,
    });
    const linear = userinfoRequest(config({ userinfo_body: { query: "{ viewer { id } }" } }), "tok");
    expect(linear.method).toBe("POST");
    expect(linear.headers["content-type"]).toBe("application/json");
    expect(JSON.parse(linear.body!)).toEqual({ query: "{ viewer { id } }" });
  });
  test("api_headers default to none", () => {
    expect(apiHeaders(config())).toEqual({});
  });
});

describe("revocation", () => {
  const rfc = config({ revocation_endpoint: "https://p.example/revoke" });
  test("RFC 7009: the refresh token first, then the access token, form-encoded with a hint and the client's credentials", () => {
    expect(revocationTargets(rfc, true)).toEqual(["refresh_token", "access_token"]);
    expect(revocationTargets(rfc, false)).toEqual(["access_token"]);
    const r = revocationRequest(rfc, "rt", "refresh_token");
    expect(r.url).toBe("https://p.example/revoke");
    expect(r.method).toBe("POST");
    expect(r.headers["content-type"]).toBe("application/x-www-form-urlencoded");
    expect(Object.fromEntries(new URLSearchParams(r.body))).toEqual({ token: "rt", token_type_hint: "refresh_token", client_id: "id:1", client_secret: "s&2" });
  });
  test("revocation_auth none sends the token alone (Google)", () => {
    const r = revocationRequest(config({ revocation_endpoint: "https://p/revoke", revocation_auth: "none" }), "t", "access_token");
    expect(r.body).toBe("token=t&token_type_hint=access_token");
    expect(r.headers.authorization).toBeUndefined();
  });
  test("bearer: the token is the credential and there is no body (Slack, Linear, Dropbox); only the access token", () => {
    const c = config({ revocation_endpoint: "https://p/revoke", revocation_auth: "bearer" });
    expect(revocationTargets(c, true)).toEqual(["access_token"]);
    const r = revocationRequest(c, "xoxp", "access_token");
    expect(r.headers.authorization).toBe("Bearer xoxp");
    expect(r.body).toBeUndefined();
  });
  test("GitHub's shape: DELETE /applications/{client_id}/token, Basic, JSON {access_token} without a hint", () => {
    const c = config({
      revocation_endpoint: "https://api.example/applications/{client_id}/token",
      revocation_auth: "client_secret_basic",
      revocation_format: "json",
      revocation_method: "DELETE",
      revocation_token_param: "access_token",
      api_headers: { "X-GitHub-Api-Version": "2022-11-28" },
    });
    expect(revocationTargets(c, true)).toEqual(["access_token"]);
    const r = revocationRequest(c, "gho_x", "access_token");
    expect(r.url).toBe("https://api.example/applications/id%3A1/token");
    expect(r.method).toBe("DELETE");
    expect(r.headers.authorization).toBe(basic("id:1", "s&2"));
    expect(r.headers["X-GitHub-Api-Version"]).toBe("2022-11-28");
    expect(JSON.parse(r.body!)).toEqual({ access_token: "gho_x" });
  });
  test("success is a 2xx without an error in the body, or the provider saying the token is already invalid", () => {
    expect(revocationSucceeded(200, {})).toBe(true);
    expect(revocationSucceeded(204, null)).toBe(true);
    expect(revocationSucceeded(200, { ok: true, revoked: true })).toBe(true);
    expect(revocationSucceeded(200, { ok: false, error: "invalid_auth" })).toBe(false);
    expect(revocationSucceeded(400, { error: "invalid_token" })).toBe(true);
    expect(revocationSucceeded(400, { error: "invalid_request" })).toBe(false);
    expect(revocationSucceeded(503, null)).toBe(false);
  });
});
