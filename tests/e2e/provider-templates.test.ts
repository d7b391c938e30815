/**
 * DESIGN §11 end to end over HTTP: `ath serve` with each built-in template pointed at a mock of that provider (only
 * URLs and client credentials overridden), the person's consent in the cookie-jar browser, then the agent's token,
 * a proxied API call, a refresh and a revocation — each checked against what the mock received, so a request a real
 * provider would refuse (wrong client authentication, body format, scope parameter or separator, missing header)
 * fails here. Consent in Chromium for github, slack and notion is in tests/browser/provider-templates.test.ts.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { call, fullFlow } from "../helpers/agent.ts";
import { expectError } from "../helpers/expect-error.ts";
import { startGateway, type GatewayOptions } from "../helpers/gateway.ts";
import {
  checkAuthorizeAndToken,
  checkRefresh,
  checkRevocation,
  MOCKS,
  proxiedCall,
  recordedUserId,
  startTemplateWorld,
  TEMPLATE_CASES,
  type TemplateWorld,
} from "../helpers/template-world.ts";

const IDS = Object.keys(TEMPLATE_CASES);
let w: TemplateWorld;
beforeAll(async () => {
  w = await startTemplateWorld(IDS);
});
afterAll(() => w?.stop());

for (const id of IDS) {
  const c = TEMPLATE_CASES[id]!;
  describe(`template ${id} against a mock of the provider`, () => {
    test("the full flow: provider-correct authorize and token requests, the provider's user id, and a proxied call with the provider token and static headers", async () => {
      const mock = w.mocks[id]!;
      const f = await fullFlow(w.baseUrl, { provider_id: id, scopes: c.scopes });
      expect(f.token.json.effective_scopes).toEqual(c.scopes);
      checkAuthorizeAndToken(mock, c);
      expect(recordedUserId(w, id)).toBe(c.userId);

      const res = await proxiedCall(w, id, f.accessToken);
      expect({ status: res.status, text: res.text }).toEqual({ status: 200, text: expect.stringContaining(c.api.answer) });
      const seen = mock.core.requests.at(-1)!;
      expect(seen.headers.get("authorization")).toBe(`Bearer ${mock.core.grants.at(-1)!.accessToken}`);
      for (const [name, value] of Object.entries(c.apiHeaders ?? {})) expect({ [name]: seen.headers.get(name) }).toEqual({ [name]: value });

      if (c.refresh !== "none") {
        // The provider expires the token early: the proxy's call is refused, the gateway refreshes the provider's way once and
        // retries. (A provider whose tokens outlive less than the refresh margin is refreshed before every call instead.)
        if (c.refreshOn !== "expiry") mock.core.expireAccessTokens();
        const again = await proxiedCall(w, id, f.accessToken);
        expect(again.status).toBe(200);
        checkRefresh(mock, c);
        checkAuthorizeAndToken(mock, c);
      }

      const grant = mock.core.grants.at(-1)!;
      const issued = { access: grant.accessToken, refresh: grant.refreshToken };
      const revoked = await call(`${w.baseUrl}/ath/revoke`, { json: { token: f.accessToken, ...f.client } });
      expect(revoked.status).toBe(200);
      checkRevocation(mock, c, issued);
      if (c.revoke.length > 0) expect(grant.revoked).toBe(true);
      expectError(await proxiedCall(w, id, f.accessToken), "TOKEN_REVOKED");
    });
  });
}

describe("dead grants in the provider's own words", () => {
  test("slack: a refresh answered 200 {ok:false, error:invalid_refresh_token} kills the grant: 401 TOKEN_EXPIRED upstream_grant_revoked, no loop", async () => {
    const mock = w.mocks.slack!;
    const f = await fullFlow(w.baseUrl, { provider_id: "slack", scopes: ["channels:history"] });
    // The person removes the app in Slack: its tokens die at the provider.
    mock.core.revoke(mock.core.grants.at(-1)!.refreshToken);
    const refreshesBefore = mock.core.requestsTo("token").length;
    expectError(await proxiedCall(w, "slack", f.accessToken), "TOKEN_EXPIRED", { reason: "upstream_grant_revoked" });
    expectError(await proxiedCall(w, "slack", f.accessToken), "TOKEN_EXPIRED", { reason: "upstream_grant_revoked" });
    // One refresh, refused with HTTP 200 and ok:false; the second call does not ask again.
    const refreshes = mock.core.requestsTo("token").slice(refreshesBefore);
    expect(refreshes.map((r) => [r.status, new URLSearchParams(r.body).get("grant_type")])).toEqual([[200, "refresh_token"]]);
  });
});

describe("what the mocks refuse, a template gets right", () => {
  test("github: without Accept: application/json the token endpoint answers form-encoded, and errors come with HTTP 200", async () => {
    const mock = w.mocks.github!;
    const form = new URLSearchParams({ client_id: mock.core.clientId, client_secret: mock.core.clientSecret, code: "nope" });
    const plain = await fetch(`${mock.core.url}/login/oauth/access_token`, { method: "POST", body: form });
    expect(plain.status).toBe(200);
    expect(plain.headers.get("content-type")).toStartWith("application/x-www-form-urlencoded");
    expect(new URLSearchParams(await plain.text()).get("error")).toBe("bad_verification_code");
  });

  test("slack: scopes in `scope` with spaces are refused as invalid_scope; notion: a form body is refused", async () => {
    const slack = w.mocks.slack!;
    const u = new URL(`${slack.core.url}/oauth/v2/authorize`);
    u.search = new URLSearchParams({ client_id: slack.core.clientId, redirect_uri: slack.core.options.redirectUris[0]!, scope: "channels:history chat:write", state: "s" }).toString();
    const r = await fetch(u, { redirect: "manual" });
    expect(new URL(r.headers.get("location")!).searchParams.get("error")).toBe("invalid_scope");
    const notion = w.mocks.notion!;
    const basic = `Basic ${btoa(`${notion.core.clientId}:${notion.core.clientSecret}`)}`;
    const form = await fetch(`${notion.core.url}/v1/oauth/token`, { method: "POST", headers: { authorization: basic }, body: new URLSearchParams({ grant_type: "authorization_code", code: "x" }) });
    expect(form.status).toBe(400);
    expect(((await form.json()) as { error: string }).error).toBe("invalid_request");
  });
});

describe("templates in the providers file and the admin API", () => {
  test("a template with a wrong override stops the start, naming the provider and the field", async () => {
    // A providers file is JSON: nothing stops an operator from writing a separator the schema does not know.
    const entry = { template: "github", client_id: "x", client_secret: "y", token_endpoint: "not a url", scope_separator: ";" } as Record<string, unknown>;
    const attempt = startGateway({ providers: { gh: entry as GatewayOptions["providers"][string] } });
    const error = await attempt.then(() => null, (e: Error) => e.message);
    expect(error).toContain("providers.gh.token_endpoint: Invalid http(s) URL");
    expect(error).toContain('providers.gh.scope_separator: Invalid option: expected one of " "|","');
  });

  test("an unknown template stops the start, naming the provider, the template and the known ones", async () => {
    const attempt = startGateway({ providers: { gh: { template: "githb", client_id: "x", client_secret: "y" } } });
    const error = await attempt.then(() => null, (e: Error) => e.message);
    expect(error).toContain(`providers.gh.template: unknown template 'githb' (known: ${Object.keys(MOCKS).join(", ")})`);
    expect(error).not.toContain("providers.gh.display_name");
  });

  test("POST and PUT /ath/admin/providers take a template; an unknown one is 400 naming it and the known ones", async () => {
    const admin = { "x-ath-user-token": w.gw.adminToken };
    const created = await call(`${w.baseUrl}/ath/admin/providers`, {
      headers: admin,
      json: { provider_id: "gh-admin", template: "github", client_id: "Iv1.x", client_secret: "s3cret", display_name: "GitHub (admin)" },
    });
    expect(created.status).toBe(201);
    expect(created.json).toMatchObject({
      provider_id: "gh-admin",
      template: "github",
      display_name: "GitHub (admin)",
      token_endpoint: "https://github.com/login/oauth/access_token",
      revocation_method: "DELETE",
      client_secret: "********",
    });
    const put = await call(`${w.baseUrl}/ath/admin/providers/gh-admin`, { method: "PUT", headers: admin, json: { template: "gitlab", client_id: "gl" } });
    expect(put.status).toBe(200);
    expect(put.json).toMatchObject({ template: "gitlab", token_endpoint: "https://gitlab.com/oauth/token", client_id: "gl" });
    const unknown = await call(`${w.baseUrl}/ath/admin/providers`, { headers: admin, json: { provider_id: "x", template: "githb", client_id: "a", client_secret: "b" } });
    expectError(unknown, "INVALID_REQUEST");
    expect(unknown.json).toEqual({
      code: "INVALID_REQUEST",
      message: `Invalid request: Provider 'x': unknown template 'githb' (known: ${Object.keys(MOCKS).join(", ")})`,
      details: { field: "template", template: "githb", known_templates: Object.keys(MOCKS) },
    });
    const wrong = await call(`${w.baseUrl}/ath/admin/providers`, { headers: admin, json: { provider_id: "y", template: "notion", client_id: "a", client_secret: "b", api_headers: { Authorization: "x" } } });
    expectError(wrong, "INVALID_REQUEST");
    expect(wrong.json.details).toMatchObject({ field: "api_headers.Authorization" });
    expect((await call(`${w.baseUrl}/ath/admin/providers/y`, { headers: admin })).status).toBe(404);
  });
});

describe("identity endpoints are allowed under every scope of a template (scope_rules \"*\", DESIGN §11)", () => {
  // For each template: a scope that does not name the identity endpoint, the endpoint, and whether the provider itself
  // answers it for that token (GitLab and Microsoft Graph ask for read_user / User.Read: the gateway forwards, the
  // provider decides).
  const CASES: [id: string, scope: string, method: string, path: string, providerAnswers: boolean][] = [
    ["github", "repo", "GET", "user", true],
    ["gitlab", "read_repository", "GET", "user", false],
    ["google", "https://www.googleapis.com/auth/gmail.send", "GET", "oauth2/v3/userinfo", true],
    ["microsoft", "Mail.Read", "GET", "me", false],
    ["slack", "chat:write", "POST", "auth.test", true],
    ["slack", "chat:write", "GET", "auth.test", true],
    ["notion", "insert_content", "GET", "users/me", true],
    ["linear", "issues:create", "POST", "graphql", true],
    ["dropbox", "files.metadata.write", "POST", "users/get_current_account", true],
  ];
  for (const [id, scope, method, path, providerAnswers] of CASES) {
    test(`${id}: ${method} /${path} with only ${scope} reaches the provider${providerAnswers ? " and is answered 200" : ""}`, async () => {
      const mock = w.mocks[id]!;
      const f = await fullFlow(w.baseUrl, { provider_id: id, scopes: [scope] });
      const before = mock.core.requests.length;
      const r = await call(`${w.baseUrl}/ath/proxy/${id}/${path}`, {
        method,
        headers: { authorization: `Bearer ${f.accessToken}` },
        ...(id === "linear" ? { json: { query: "{ viewer { id name } }" } } : {}),
      });
      expect({ id, error: r.headers.get("x-ath-error") }).toEqual({ id, error: null });
      const seen = mock.core.requests.slice(before).filter((q) => q.path.endsWith(`/${path}`));
      expect({ id, forwarded: seen.map((q) => q.method) }).toEqual({ id, forwarded: [method] });
      if (providerAnswers) expect({ id, status: r.status }).toEqual({ id, status: 200 });
    });
  }

  test("a path only another scope opens is still refused (the \"*\" key opens the identity endpoint, nothing more)", async () => {
    const f = await fullFlow(w.baseUrl, { provider_id: "github", scopes: ["read:user"] });
    const r = await call(`${w.baseUrl}/ath/proxy/github/user/repos`, { headers: { authorization: `Bearer ${f.accessToken}` } });
    expectError(r, "SCOPE_NOT_APPROVED");
  });
});
