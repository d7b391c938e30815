/**
 * ID-JAG at POST /oauth/token in process (DESIGN §23 "Pinned"): an MCP client that registered the jwt-bearer grant
 * trades an enterprise IdP's assertion for a front-door token, without a browser once the person connected the
 * upstream; before that, a 400 `interaction_required` with `consent_url` beside `error`. Refusals in OAuth's words:
 * `invalid_grant` for a bad assertion, `invalid_target` for a resource that is not this MCP server,
 * `unauthorized_client` for a client that did not register the grant.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { call, consent } from "../../../helpers/agent.ts";
import { TestIdp } from "../../../helpers/idp.ts";
import { ADMIN_TOKEN, BASE, INTROSPECTION_TOKEN, postJson, scriptedGateway, type InProcess } from "../../../helpers/in-process.ts";
import { MCP_REDIRECT, PROVIDER } from "../../../helpers/refresh-doors.ts";

const RESOURCE = `${BASE}/mcp/${PROVIDER}`;
const JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer";
let g: InProcess;
let idp: TestIdp;
beforeEach(async () => {
  idp = await TestIdp.start();
  ({ g } = await scriptedGateway((p) => ({ [PROVIDER]: p.config({ available_scopes: ["mail:read", "mail:send"], mcp: { url: `${p.origin}/api/mcp` } }) })));
  const r = await postJson(g, "/ath/admin/trusted-issuers", { issuer: idp.issuer, jwks: idp.jwks(), kind: "idp" }, { "x-ath-user-token": ADMIN_TOKEN });
  expect(r.status).toBe(201);
});
afterEach(async () => {
  await g.close();
  await idp.stop();
});

async function registerClient(grantTypes = ["authorization_code", "refresh_token", JWT_BEARER]): Promise<string> {
  const r = await call(`${BASE}/oauth/register`, {
    json: { client_name: "Enterprise MCP Client", redirect_uris: [MCP_REDIRECT], token_endpoint_auth_method: "none", grant_types: grantTypes },
    fetch: g.fetch,
  });
  expect(r.status).toBe(201);
  return String(r.json.client_id);
}

const present = (clientId: string, assertion: string, extra: Record<string, string> = {}) =>
  call(`${BASE}/oauth/token`, { form: { grant_type: JWT_BEARER, client_id: clientId, assertion, ...extra }, fetch: g.fetch });

const jag = (clientId: string, o: Parameters<TestIdp["idJag"]>[1] = {}, resource = RESOURCE) =>
  idp.idJag({ aud: BASE, client_id: clientId, resource, scope: "mail:read" }, o);

describe("ID-JAG at /oauth/token (DESIGN §23)", () => {
  test("an MCP client gets a front-door token from an ID-JAG: first interaction_required with consent_url (a 400), then — the upstream connected once — a token, no browser", async () => {
    const clientId = await registerClient();
    const first = await present(clientId, await jag(clientId));
    expect(first.status).toBe(400);
    expect(first.json.error).toBe("interaction_required");
    expect(String(first.json.consent_url)).toStartWith(`${BASE}/ath/consent/`);
    expect(first.headers.get("cache-control")).toBe("no-store");
    const c = await consent(String(first.json.consent_url), { browser: g.browser() });
    expect(c.page.body).toContain("Connected");
    const r = await present(clientId, await jag(clientId));
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ token_type: "Bearer", scope: "mail:read" });
    expect(r.json.refresh_token).toBeUndefined();
    const intro = await postJson(g, "/ath/introspect", { token: r.json.access_token }, { authorization: `Bearer ${INTROSPECTION_TOKEN}` });
    expect(intro.json).toMatchObject({ active: true, provider_id: PROVIDER, user_id: `${idp.issuer}#alice@corp.example` });
    expect(String(intro.json.client_id)).toStartWith("mcp_");
  });

  test("refusals in OAuth's words: a bad assertion is invalid_grant, a resource not this MCP server invalid_target, a client without the grant unauthorized_client", async () => {
    const clientId = await registerClient();
    const now = Math.floor(Date.now() / 1000);
    for (const [name, assertion] of [
      ["expired", await jag(clientId, { claims: { iat: now - 600, exp: now - 5 } })],
      ["forged", await jag(clientId, { forged: true })],
      ["another client's", await jag("mcp_someone_else")],
      ["wrong audience", await jag(clientId, { claims: { aud: "https://as.elsewhere.example" } })],
      ["alg none", await jag(clientId, { unsigned: true })],
    ] as const) {
      const r = await present(clientId, assertion);
      expect({ name, status: r.status, error: r.json.error }).toEqual({ name, status: 400, error: "invalid_grant" });
    }
    const elsewhere = await present(clientId, await jag(clientId, {}, "https://mcp.elsewhere.example/mcp"));
    expect({ status: elsewhere.status, error: elsewhere.json.error }).toEqual({ status: 400, error: "invalid_target" });
    const mismatched = await present(clientId, await jag(clientId), { resource: `${BASE}/mcp/other` });
    expect({ status: mismatched.status, error: mismatched.json.error }).toEqual({ status: 400, error: "invalid_target" });
    const plain = await registerClient(["authorization_code"]);
    const r = await present(plain, await jag(plain));
    expect({ status: r.status, error: r.json.error }).toEqual({ status: 400, error: "unauthorized_client" });
    const meta = await call(`${BASE}/.well-known/oauth-authorization-server`, { fetch: g.fetch });
    expect(meta.json.grant_types_supported).toContain(JWT_BEARER);
  });
});
