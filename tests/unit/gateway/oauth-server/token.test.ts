/**
 * POST /oauth/token's OAuth wire (DESIGN §18; RFC 6749 §4.1.3, §5, §6; RFC 7636; RFC 8707), in process: the form and
 * its repeated parameters, client authentication (public; confidential by post or Basic; malformed Basic is a 401, never
 * a 500), the code exchange's checks (single use, its client, redirect URI, PKCE, resource), the answer's shape and
 * cache headers, the first completed authorization recorded, and the one mapping of the domain's refusals to OAuth
 * errors (a store outage stays what it is). The family rules themselves: tests/unit/gateway/endpoints/refresh-families.test.ts.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { hashSecret } from "../../../../src/gateway/crypto/secrets.ts";
import { asOAuthError } from "../../../../src/gateway/oauth-server/token.ts";
import { AthError } from "../../../../src/protocol/index.ts";
import { call, type HttpResult } from "../../../helpers/agent.ts";
import { BASE, scriptedGateway, type InProcess } from "../../../helpers/in-process.ts";
import { MCP_REDIRECT, mcpCode, PROVIDER } from "../../../helpers/refresh-doors.ts";

const RESOURCE = `${BASE}/mcp/${PROVIDER}`;
let g: InProcess;
beforeEach(async () => {
  ({ g } = await scriptedGateway((p) => ({ [PROVIDER]: p.config({ mcp: { url: `${p.origin}/api/mcp` } }) })));
});
afterEach(() => g.close());

const net = () => ({ baseUrl: BASE, fetch: (req: Request) => g.fetch(req) });
const post = (form: Record<string, string> | string, headers: Record<string, string> = {}) =>
  call(`${BASE}/oauth/token`, {
    ...(typeof form === "string" ? { body: form } : { form }),
    headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
    fetch: g.fetch,
  });
const exchange = (c: { clientId: string; code: string; verifier: string }, over: Record<string, string> = {}) =>
  post({ grant_type: "authorization_code", code: c.code, code_verifier: c.verifier, client_id: c.clientId, redirect_uri: MCP_REDIRECT, resource: RESOURCE, ...over });

function expectOAuth(r: HttpResult, status: number, error: string, description?: string | RegExp) {
  expect({ status: r.status, error: r.json.error }).toEqual({ status, error });
  if (typeof description === "string") expect(r.json.error_description).toBe(description);
  else if (description) expect(String(r.json.error_description)).toMatch(description);
  expect(Object.keys(r.json).sort()).toEqual(["error", "error_description"]);
  expect(r.headers.get("cache-control")).toBe("no-store");
}

describe("POST /oauth/token — the request", () => {
  test("a body that is not a form, a repeated parameter and an unknown grant_type are invalid_request / unsupported_grant_type; nothing is spent", async () => {
    const c = await mcpCode(net());
    expectOAuth(await call(`${BASE}/oauth/token`, { json: { grant_type: "authorization_code" }, fetch: g.fetch }), 400, "invalid_request", /x-www-form-urlencoded/);
    expectOAuth(await post(`grant_type=authorization_code&code=${c.code}&code=${c.code}&client_id=${c.clientId}`), 400, "invalid_request", "the parameter code is repeated");
    expectOAuth(await post({ grant_type: "password", client_id: c.clientId }), 400, "unsupported_grant_type");
    expectOAuth(await post({ grant_type: "authorization_code", client_id: c.clientId, code_verifier: c.verifier }), 400, "invalid_request", "code is required");
    expectOAuth(await post({ grant_type: "authorization_code", client_id: c.clientId, code: c.code, code_verifier: "short" }), 400, "invalid_request", /code_verifier/);
    expectOAuth(await post({ grant_type: "refresh_token", client_id: c.clientId }), 400, "invalid_request", "refresh_token is required");
    expect((await exchange(c)).status).toBe(200);
  });

  test("client authentication: unknown or missing client_id is 401 invalid_client with a Basic challenge; malformed or contradicting Basic credentials are 401, never a 500; nothing is spent", async () => {
    const c = await mcpCode(net());
    const unknown = await exchange({ ...c, clientId: "mcp_nobody" });
    expectOAuth(unknown, 401, "invalid_client", "unknown client");
    expect(unknown.headers.get("www-authenticate")).toBe('Basic realm="ath"');
    expectOAuth(await post({ grant_type: "authorization_code", code: c.code, code_verifier: c.verifier }), 401, "invalid_client", "client_id is required");
    for (const basic of ["%%%", btoa("mcp_x%E0%A4%A:secret"), btoa(`${c.clientId}:%ZZ`)]) {
      expectOAuth(await post({ grant_type: "authorization_code", code: c.code, code_verifier: c.verifier }, { authorization: `Basic ${basic}` }), 401, "invalid_client", "malformed Basic credentials");
    }
    expect((await exchange(c)).status).toBe(200); // none of the refused requests spent the code
  });

  test("a confidential client authenticates with its secret, by Basic or in the form; without it or with a wrong one it is 401 and its code stays unspent", async () => {
    const basic = await mcpCode(net(), { auth: "client_secret_basic" });
    expect(basic.clientSecret).toStartWith("mcp_secret_");
    expectOAuth(await exchange(basic), 401, "invalid_client", "client authentication failed");
    expectOAuth(await exchange(basic, { client_secret: "mcp_secret_wrong" }), 401, "invalid_client", "client authentication failed");
    const auth = `Basic ${btoa(`${encodeURIComponent(basic.clientId)}:${encodeURIComponent(basic.clientSecret!)}`)}`;
    const viaBasic = await post({ grant_type: "authorization_code", code: basic.code, code_verifier: basic.verifier, redirect_uri: MCP_REDIRECT }, { authorization: auth });
    expect(viaBasic.status).toBe(200);
    const form = await mcpCode(net(), { auth: "client_secret_post" });
    expect((await exchange(form, { client_secret: form.clientSecret! })).status).toBe(200);
    const other = await mcpCode(net());
    expectOAuth(await post({ grant_type: "authorization_code", code: other.code, code_verifier: other.verifier, client_id: other.clientId }, { authorization: auth }), 401, "invalid_client", "two different client_ids");
  });
});

describe("POST /oauth/token — grant_type=authorization_code", () => {
  test("the answer: the tokens, their lifetimes and the granted scope, never cached; the client's first completed authorization is recorded", async () => {
    const c = await mcpCode(net(), { scopes: ["mail:read"] });
    expect((await g.gw.store.getMcpClient(c.clientId))?.authorized_at).toBeNull();
    const r = await exchange(c);
    expect(r.status).toBe(200);
    expect(r.json).toEqual({
      access_token: expect.stringMatching(/^ath_tk_/),
      token_type: "Bearer",
      expires_in: 3600,
      refresh_token: expect.stringMatching(/^ath_rt_/),
      refresh_expires_in: expect.any(Number),
      scope: "mail:read",
    });
    expect([r.headers.get("cache-control"), r.headers.get("pragma")]).toEqual(["no-store", "no-cache"]);
    expect((await g.gw.store.getMcpClient(c.clientId))?.authorized_at).toBe(g.clock.now());
    expect(await g.gw.store.getRefreshToken(hashSecret(String(r.json.refresh_token)))).toMatchObject({ oauth_client_id: c.clientId, resource: RESOURCE, client_id: c.clientId });
  });

  test("a code is spent by its first presentation, right or wrong: a wrong verifier, another client, another redirect_uri or resource are refused, and the code is then gone", async () => {
    const cases: [string, (c: Awaited<ReturnType<typeof mcpCode>>, other: string) => Promise<HttpResult>, string, string][] = [
      ["wrong verifier", (c) => exchange(c, { code_verifier: "v".repeat(43) }), "invalid_grant", "code_verifier does not match the code_challenge"],
      ["another client", (c, other) => exchange({ ...c, clientId: other }), "invalid_grant", "the code was issued to another client"],
      ["another redirect_uri", (c) => exchange(c, { redirect_uri: "http://127.0.0.1:33418/other" }), "invalid_grant", "redirect_uri differs from the authorization request's"],
      ["another resource", (c) => exchange(c, { resource: `${BASE}/mcp/elsewhere` }), "invalid_target", "resource differs from the authorization request's"],
    ];
    const other = (await mcpCode(net())).clientId;
    for (const [, wrong, error, description] of cases) {
      const c = await mcpCode(net());
      expectOAuth(await wrong(c, other), 400, error, description);
      expectOAuth(await exchange(c), 400, "invalid_grant", "the code is unknown, used or expired");
    }
    expect(await g.audited("token.issued")).toBe(0);
  });

  test("a trailing slash on the resource is the same resource; a refresh naming another resource is invalid_target and spends nothing", async () => {
    const c = await mcpCode(net());
    const issued = await exchange(c, { resource: `${RESOURCE}/` });
    expect(issued.status).toBe(200);
    const rt = String(issued.json.refresh_token);
    expectOAuth(await post({ grant_type: "refresh_token", refresh_token: rt, client_id: c.clientId, resource: `${BASE}/mcp/elsewhere` }), 400, "invalid_target");
    expect((await post({ grant_type: "refresh_token", refresh_token: rt, client_id: c.clientId, resource: RESOURCE })).status).toBe(200);
  });
});

describe("the domain's refusals in OAuth's words (RFC 6749 §5.2)", () => {
  test("each refusal maps to its OAuth error; an error that is no refusal (a store outage) is left to the boundary", () => {
    const cases: [AthError, string | null, string?][] = [
      [new AthError("INVALID_GRANT", "Unknown refresh token"), "invalid_grant", "Unknown refresh token"],
      [new AthError("INVALID_GRANT", "x", { reason: "refresh_token_spent" }), "invalid_grant", "the refresh token was just rotated"],
      [new AthError("INVALID_GRANT", "x", { reason: "refresh_token_reused" }), "invalid_grant", "the refresh token was already used: its whole family is revoked"],
      [new AthError("INVALID_GRANT", "x", { reason: "refresh_token_revoked", upstream: "upstream_grant_revoked" }), "invalid_grant", "the person's upstream grant is gone: authorize again"],
      [new AthError("INVALID_CLIENT"), "invalid_grant", "the client is gone"],
      [new AthError("AGENT_UNAPPROVED"), "invalid_grant", "an administrator suspended this client"],
      [new AthError("SCOPE_NOT_APPROVED", "none left"), "invalid_scope", "none left"],
      [new AthError("INVALID_REQUEST", "x", { reason: "scope_widening", scopes: ["a", "b"] }), "invalid_scope", "a refresh cannot widen the scopes: a b"],
      [new AthError("INVALID_REQUEST", "other resource", { reason: "resource_mismatch" }), "invalid_target", "other resource"],
      [new AthError("INVALID_REQUEST", "bad"), "invalid_request", "bad"],
      [new AthError("SERVICE_UNAVAILABLE"), null],
      [new AthError("INTERNAL_ERROR"), null],
    ];
    for (const [err, error, description] of cases) {
      const mapped = asOAuthError(err);
      expect(mapped === null ? null : { error: mapped.error, description: mapped.description, status: mapped.status }).toEqual(
        error === null ? null : { error, description: description!, status: 400 },
      );
    }
  });
});
