/**
 * ID-JAG at POST /ath/token in process (DESIGN §23): an ATH agent trades an enterprise IdP's Identity Assertion JWT
 * Authorization Grant for a token of the person it names — no consent page once the person connected the provider;
 * before that, 403 CONSENT_REQUIRED whose consent_url takes the person straight to the upstream's sign-in. Every check
 * §23 lists, each with its pinned `details.reason`; the assertion's jti is spent once.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { consent, registeredAgent, type ClientCredentials } from "../../../helpers/agent.ts";
import { attest, type TestAgent } from "../../../helpers/attestations.ts";
import { expectError } from "../../../helpers/expect-error.ts";
import { TestIdp } from "../../../helpers/idp.ts";
import { ADMIN_TOKEN, BASE, postJson, scriptedGateway, type InProcess } from "../../../helpers/in-process.ts";

const TOKEN_URL = `${BASE}/ath/token`;
const RESOURCE = `${BASE}/ath/proxy/mail`;

let g: InProcess;
let idp: TestIdp;
let agent: TestAgent;
let client: ClientCredentials;
beforeEach(async () => {
  idp = await TestIdp.start();
  ({ g } = await scriptedGateway((p) => ({ mail: p.config({ available_scopes: ["mail:read", "mail:send"] }) }), {
    hosts: { [idp.issuer]: (req) => fetch(req) },
  }));
  const added = await postJson(g, "/ath/admin/trusted-issuers", { issuer: idp.issuer, jwks_uri: idp.jwksUri, kind: "idp" }, { "x-ath-user-token": ADMIN_TOKEN });
  expect(added.status).toBe(201);
  ({ agent, client } = await registeredAgent(g, { providers: [{ provider_id: "mail", scopes: ["mail:read", "mail:send"] }] }));
});
afterEach(async () => {
  await g.close();
  await idp.stop();
});

async function present(assertion: string, extra: Record<string, unknown> = {}) {
  return postJson(g, "/ath/token", {
    grant_type: "urn:ietf:params:oauth:grant-type:jwt-bearer",
    ...client,
    agent_attestation: await attest(agent, TOKEN_URL),
    assertion,
    provider_id: "mail",
    ...extra,
  });
}

const jag = (o: Parameters<TestIdp["idJag"]>[1] = {}, c: Partial<Parameters<TestIdp["idJag"]>[0]> = {}) =>
  idp.idJag({ aud: BASE, client_id: client.client_id, resource: RESOURCE, scope: "mail:read", ...c }, o);

/** The person connects once through the consent_url of a CONSENT_REQUIRED. */
async function connect(): Promise<void> {
  const first = await present(await jag());
  const e = expectError(first, "CONSENT_REQUIRED");
  const c = await consent(String(e.details?.consent_url), { browser: g.browser() });
  expect(c.page.body).toContain("Connected");
}

describe("ID-JAG at /ath/token (DESIGN §23)", () => {
  test("without the person's upstream grant: 403 CONSENT_REQUIRED with a consent_url that skips ath's page; after connecting, a new assertion gets a token and no browser", async () => {
    const first = await present(await jag());
    const e = expectError(first, "CONSENT_REQUIRED", { provider_id: "mail" });
    const url = String(e.details?.consent_url);
    expect(url).toStartWith(`${BASE}/ath/consent/`);
    const page = await g.browser().navigate(url, { stopAt: (u) => u.origin !== BASE });
    expect(new URL(page.url).origin).not.toBe(BASE); // straight to the upstream: no page of ath's
    await connect();
    const r = await present(await jag());
    expect(r.status).toBe(200);
    expect(r.json).toMatchObject({ token_type: "Bearer", effective_scopes: ["mail:read"], provider_id: "mail", agent_id: agent.agentId });
    expect(r.json.refresh_token).toBeUndefined();
    const intro = await postJson(g, "/ath/introspect", { token: r.json.access_token }, { authorization: `Bearer ${ADMIN_TOKEN}` });
    expect(intro.json).toMatchObject({ active: true, user_id: `${idp.issuer}#alice@corp.example`, scope: "mail:read" });
  });

  test("scopes are the assertion's ∩ what the agent is approved for ∩ the request's scope", async () => {
    await connect();
    const both = await present(await jag({}, { scope: "mail:read mail:send calendar:read" }));
    expect(both.json.effective_scopes).toEqual(["mail:read"]); // the connection granted mail:read only
    const narrowed = await present(await jag(), { scope: "mail:send" });
    expectError(narrowed, "SCOPE_NOT_APPROVED");
  });

  test("forged, untrusted, expired, replayed, wrong-audience, wrong-client, alg none and wrong-typ assertions are refused with the pinned reasons, and nothing is issued", async () => {
    await connect();
    const now = Math.floor(Date.now() / 1000);
    const cases: [string, Promise<string>, string][] = [
      ["forged", jag({ forged: true }), "assertion_invalid"],
      ["untrusted issuer", jag({ claims: { iss: "https://evil.example" } }), "issuer_untrusted"],
      ["expired", jag({ claims: { iat: now - 600, exp: now - 1 } }), "assertion_expired"],
      ["wrong audience", jag({ claims: { aud: "https://other.example" } }), "assertion_invalid"],
      ["wrong client", jag({ claims: { client_id: "ath_someone_else" } }), "assertion_invalid"],
      ["alg none", jag({ unsigned: true }), "assertion_invalid"],
      ["wrong typ", jag({ header: { typ: "JWT" } }), "assertion_invalid"],
      ["no jti", jag({ claims: { jti: undefined } }), "assertion_invalid"],
      ["iat in the future", jag({ claims: { iat: now + 600, exp: now + 900 } }), "assertion_invalid"],
    ];
    for (const [name, assertion, reason] of cases) {
      const r = await present(await assertion);
      expect({ name, reason: expectError(r, "INVALID_GRANT").details?.reason }).toEqual({ name, reason });
      expect(r.text).not.toContain("ath_tk_");
    }
    const once = await jag();
    expect((await present(once)).status).toBe(200);
    expectError(await present(once), "INVALID_GRANT", { reason: "assertion_replayed" });
    expectError(await present(await jag({}, { resource: `${BASE}/ath/proxy/other` })), "INVALID_REQUEST", { reason: "resource_mismatch" });
  });

  test("an unknown kid refetches the JWKS once, at most once a minute", async () => {
    await connect();
    const before = idp.fetches;
    await idp.rotate();
    expect((await present(await jag())).status).toBe(200);
    expect(idp.fetches).toBe(before + 1);
    await idp.rotate();
    const refused = await present(await jag());
    expectError(refused, "INVALID_GRANT", { reason: "assertion_invalid" });
    expect(idp.fetches).toBe(before + 1);
    g.clock.advance(61);
    expect((await present(await jag())).status).toBe(200);
    expect(idp.fetches).toBe(before + 2);
  });
});
