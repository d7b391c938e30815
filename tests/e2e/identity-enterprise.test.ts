/**
 * Enterprise and workload identity through the compiled binary (DESIGN §23): `dist/ath serve` with the real
 * oidc-provider as the upstream, the official MCP SDK's server behind the MCP door, and a local identity provider (a
 * signing stub whose JWKS is served on loopback and counts its fetches) trusted through the providers file's
 * `trusted_issuers`. An MCP client and an ATH agent get tokens from ID-JAGs — the person connects the upstream once
 * through the consent_url, after that no browser; the refused assertions get the pinned errors at both doors; an
 * unknown kid refetches the JWKS once. A workload issuer added with `ath admin issuers add` lets a workload JWT register
 * an agent that then proxies with DPoP.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { writeFile } from "node:fs/promises";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { signDpopProof } from "../../src/agent/dpop.ts";
import { call, consent, registeredAgent, type HttpResult } from "../helpers/agent.ts";
import { attest, makeAgent } from "../helpers/attestations.ts";
import { ath, ATH_BIN, ensureBinary } from "../helpers/cli-binary.ts";
import { TestIdp } from "../helpers/idp.ts";
import { tempDir } from "../helpers/net.ts";
import { startUpstreamMcp, type UpstreamMcp } from "../helpers/upstream-mcp.ts";
import { mailProvider, MAIL_SCOPES, startWorld, type World } from "../helpers/world.ts";

const JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer";
const REDIRECT = "http://127.0.0.1:33419/callback";

let w: World;
let gw: string;
let idp: TestIdp;
let spire: TestIdp;
let upstream: UpstreamMcp | undefined;
let home: { path: string; remove: () => Promise<void> };

beforeAll(async () => {
  ensureBinary();
  idp = await TestIdp.start();
  spire = await TestIdp.start({ alg: "ES256" });
  home = await tempDir("idp");
  w = await startWorld({
    binary: ATH_BIN,
    providers: async (auth, api) => {
      upstream = await startUpstreamMcp(auth);
      // the providers file's trusted_issuers (DESIGN §23): the one key of the file that is no provider
      return { mcpmail: mailProvider(auth, api, { mcp: { url: upstream.url } }), trusted_issuers: [{ issuer: idp.issuer, jwks_uri: idp.jwksUri, kind: "idp" }] } as never;
    },
  });
  gw = w.baseUrl;
}, 120_000);
afterAll(async () => {
  await w?.stop();
  await upstream?.stop();
  await idp?.stop();
  await spire?.stop();
  await home?.remove();
});

const expectOAuthError = (r: HttpResult, error: string) => expect({ status: r.status, error: r.json.error }).toEqual({ status: 400, error });
const reasonOf = (r: HttpResult) => ({ status: r.status, code: r.json.code, reason: (r.json.details as { reason?: string } | undefined)?.reason });

describe("ID-JAG through the binary (DESIGN §23)", () => {
  test("an ATH agent: CONSENT_REQUIRED with a consent_url, the person connects once, then tokens from ID-JAGs without a browser — and the proxy serves the person's mail", async () => {
    const net = { baseUrl: gw, fetch: (req: Request) => fetch(req) };
    const { agent, client } = await registeredAgent(net, { providers: [{ provider_id: "mail", scopes: ["mail:read"] }] });
    const present = async (assertion: string) =>
      call(`${gw}/ath/token`, { form: { grant_type: JWT_BEARER, ...client, agent_attestation: await attest(agent, `${gw}/ath/token`), assertion, provider_id: "mail" } });
    const jag = (o: Parameters<TestIdp["idJag"]>[1] = {}) => idp.idJag({ aud: gw, client_id: client.client_id, resource: `${gw}/ath/proxy/mail`, scope: "mail:read" }, o);
    const first = await present(await jag());
    expect(reasonOf(first)).toEqual({ status: 403, code: "CONSENT_REQUIRED", reason: undefined });
    const connected = await consent(String((first.json.details as { consent_url: string }).consent_url));
    expect(connected.page.body).toContain("Connected");
    for (let i = 0; i < 2; i++) {
      const t = await present(await jag());
      expect(t.status).toBe(200);
      const mail = await call(`${gw}/ath/proxy/mail/v1/messages`, { headers: { authorization: `Bearer ${t.json.access_token}` } });
      expect(mail.status).toBe(200);
    }
    const now = Math.floor(Date.now() / 1000);
    const refused: [string, string, string][] = [
      ["forged", await jag({ forged: true }), "assertion_invalid"],
      ["untrusted issuer", await jag({ claims: { iss: "https://idp.elsewhere.example" } }), "issuer_untrusted"],
      ["expired", await jag({ claims: { iat: now - 900, exp: now - 1 } }), "assertion_expired"],
      ["wrong audience", await jag({ claims: { aud: "https://as.elsewhere.example" } }), "assertion_invalid"],
      ["wrong client", await jag({ claims: { client_id: "ath_another_client" } }), "assertion_invalid"],
      ["alg none", await jag({ unsigned: true }), "assertion_invalid"],
    ];
    for (const [name, assertion, reason] of refused) expect({ name, ...reasonOf(await present(assertion)) }).toEqual({ name, status: 400, code: "INVALID_GRANT", reason });
    const once = await jag();
    expect((await present(once)).status).toBe(200);
    expect(reasonOf(await present(once))).toEqual({ status: 400, code: "INVALID_GRANT", reason: "assertion_replayed" });

  }, 60_000);

  test("an MCP client: interaction_required (400, consent_url beside error), the person connects once, then a front-door token from an ID-JAG — the SDK client reaches the upstream as that person; bad assertions are invalid_grant", async () => {
    const reg = await call(`${gw}/oauth/register`, {
      json: { client_name: "Enterprise client", redirect_uris: [REDIRECT], token_endpoint_auth_method: "none", grant_types: ["authorization_code", JWT_BEARER] },
    });
    expect(reg.status).toBe(201);
    const clientId = String(reg.json.client_id);
    const resource = `${gw}/mcp/mcpmail`;
    const jag = (o: Parameters<TestIdp["idJag"]>[1] = {}) => idp.idJag({ aud: gw, client_id: clientId, resource, scope: "mail:read" }, o);
    const present = async (assertion: string) => call(`${gw}/oauth/token`, { form: { grant_type: JWT_BEARER, client_id: clientId, assertion } });
    const first = await present(await jag());
    expectOAuthError(first, "interaction_required");
    expect(Object.keys(first.json).sort()).toEqual(["consent_url", "error", "error_description"]);
    await consent(String(first.json.consent_url));
    const t = await present(await jag());
    expect(t.status).toBe(200);
    const mcp = new Client({ name: "enterprise-client", version: "1" });
    await mcp.connect(new StreamableHTTPClientTransport(new URL(resource), { requestInit: { headers: { authorization: `Bearer ${t.json.access_token}` } } }));
    const who = await mcp.callTool({ name: "whoami", arguments: {} });
    expect(JSON.stringify(who.content)).not.toContain("unknown");
    await mcp.close();
    expect(upstream!.calls.at(-1)?.tool).toBe("whoami");
    const now = Math.floor(Date.now() / 1000);
    for (const assertion of [await jag({ forged: true }), await jag({ claims: { exp: now - 1, iat: now - 600 } }), await jag({ claims: { client_id: "mcp_other" } }), await jag({ unsigned: true }), await jag({ claims: { iss: "https://nobody.example" } })]) {
      expectOAuthError(await present(assertion), "invalid_grant");
    }
    expectOAuthError(await present(await idp.idJag({ aud: gw, client_id: clientId, resource: "https://mcp.elsewhere.example/mcp" })), "invalid_target");
  }, 60_000);

  test("the CLI: `ath token --assertion` names the consent URL the first time (exit 4), then saves the person's token, which `ath proxy` uses", async () => {
    const reg = (await ath(home.path, ["register", "-g", gw, "--request", "mail:mail:read", "--format", "json"])).json();
    const jag = () => idp.idJag({ aud: gw, client_id: reg.client_id, resource: `${gw}/ath/proxy/mail`, scope: "mail:read" });
    const first = await ath(home.path, ["token", "-g", gw, "--assertion", await jag(), "--provider", "mail"]);
    expect(first.code).toBe(4);
    const url = /(http:\/\/127\.0\.0\.1:\d+\/ath\/consent\/[\w-]+)/.exec(first.stderr)?.[1];
    expect(first.stderr).toContain("CONSENT_REQUIRED");
    await consent(url!);
    const saved = await ath(home.path, ["token", "-g", gw, "--assertion", await jag(), "--provider", "mail", "--format", "json"]);
    expect(saved.json()).toMatchObject({ provider_id: "mail", token_type: "DPoP", effective_scopes: ["mail:read"] });
    const mail = await ath(home.path, ["proxy", "-g", gw, "mail", "GET", "/v1/messages"]);
    expect({ code: mail.code, stderr: mail.stderr }).toEqual({ code: 0, stderr: "" });
  }, 60_000);

  test("an unknown kid refetches the issuer's JWKS once; another unknown kid within the minute is refused without a fetch", async () => {
    const net = { baseUrl: gw, fetch: (req: Request) => fetch(req) };
    const { agent, client } = await registeredAgent(net, { providers: [{ provider_id: "mail", scopes: ["mail:read"] }] });
    const present = async (assertion: string) =>
      call(`${gw}/ath/token`, { form: { grant_type: JWT_BEARER, ...client, agent_attestation: await attest(agent, `${gw}/ath/token`), assertion, provider_id: "mail" } });
    const jag = () => idp.idJag({ aud: gw, client_id: client.client_id, resource: `${gw}/ath/proxy/mail`, scope: "mail:read" });
    // a signature that verified (CONSENT_REQUIRED: this agent never connected) tells the new key was found — after one
    // refetch of the JWKS; another unknown kid within the minute is refused, with no fetch
    const before = idp.fetches;
    await idp.rotate();
    expect(reasonOf(await present(await jag())).code).toBe("CONSENT_REQUIRED");
    expect(idp.fetches).toBe(before + 1);
    await idp.rotate();
    expect(reasonOf(await present(await jag()))).toEqual({ status: 400, code: "INVALID_GRANT", reason: "assertion_invalid" });
    expect(idp.fetches).toBe(before + 1);
  });
});

describe("workload identity through the binary (DESIGN §23)", () => {
  const WORKLOAD = "spiffe://corp.example/agents/nightly";

  test("`ath admin issuers add` trusts a workload issuer; a workload JWT registers an agent, which authorizes, gets a DPoP-bound token and proxies with its proof; list and remove", async () => {
    const entry = join(home.path, "spire.json");
    await writeFile(entry, JSON.stringify({ issuer: spire.issuer, jwks_uri: spire.jwksUri, kind: "workload", subjects: ["spiffe://corp.example/agents/*"] }));
    const admin = ["-g", gw, "--admin-token", w.gw.adminToken];
    const added = await ath(home.path, ["admin", "issuers", "add", entry, ...admin]);
    expect(added).toMatchObject({ code: 0 });
    const listed = await ath(home.path, ["admin", "issuers", "list", ...admin]);
    expect(listed.stdout).toContain(`${spire.issuer}\tworkload\tadmin\t${spire.jwksUri}\tspiffe://corp.example/agents/*\n`);
    expect(listed.stdout).toContain(`${idp.issuer}\tidp\tfile\t`);

    const key = await makeAgent();
    const register = await call(`${gw}/ath/agents/register`, {
      json: { agent_id: WORKLOAD, agent_attestation: await spire.workloadJwt({ sub: WORKLOAD, aud: gw }), developer: { name: "CI", id: "corp" }, requested_providers: [{ provider_id: "mail", scopes: MAIL_SCOPES }] },
      headers: { dpop: await signDpopProof(key.key, { method: "POST", url: `${gw}/ath/agents/register` }) },
    });
    expect(register.status).toBe(201);
    const client = { client_id: String(register.json.client_id), client_secret: String(register.json.client_secret) };
    const auth = await call(`${gw}/ath/authorize`, {
      json: { client_id: client.client_id, agent_attestation: await spire.workloadJwt({ sub: WORKLOAD, aud: gw }), provider_id: "mail", scopes: ["mail:read"], state: "nightly-state-0123456789" },
    });
    expect(auth.status).toBe(200);
    const c = await consent(String(auth.json.authorization_url));
    const tokenUrl = `${gw}/ath/token`;
    const t = await call(tokenUrl, {
      form: { grant_type: "authorization_code", ...client, code: c.code!, ath_session_id: String(auth.json.ath_session_id), agent_attestation: await spire.workloadJwt({ sub: WORKLOAD, aud: tokenUrl }) },
      headers: { dpop: await signDpopProof(key.key, { method: "POST", url: tokenUrl }) },
    });
    expect({ status: t.status, token_type: t.json.token_type }).toEqual({ status: 200, token_type: "DPoP" });
    const access = String(t.json.access_token);
    const api = `${gw}/ath/proxy/mail/v1/messages`;
    const mail = await call(api, { headers: { authorization: `DPoP ${access}`, dpop: await signDpopProof(key.key, { method: "GET", url: api, accessToken: access }) } });
    expect(mail.status).toBe(200);
    expect((await call(api, { headers: { authorization: `Bearer ${access}` } })).status).toBe(401);

    const outside = await call(`${gw}/ath/agents/register`, {
      json: { agent_id: "spiffe://corp.example/other/x", agent_attestation: await spire.workloadJwt({ sub: "spiffe://corp.example/other/x", aud: gw }), developer: { name: "CI", id: "corp" }, requested_providers: [{ provider_id: "mail", scopes: ["mail:read"] }] },
    });
    expect({ status: outside.status, code: outside.json.code }).toEqual({ status: 401, code: "INVALID_ATTESTATION" });

    const removed = await ath(home.path, ["admin", "issuers", "remove", spire.issuer, ...admin, "--format", "json"]);
    expect(removed.json()).toEqual({ issuer: spire.issuer, deleted: true });
    const after = await call(`${gw}/ath/authorize`, {
      json: { client_id: client.client_id, agent_attestation: await spire.workloadJwt({ sub: WORKLOAD, aud: gw }), provider_id: "mail", scopes: ["mail:read"], state: "nightly-state-0123456789" },
    });
    expect({ status: after.status, code: after.json.code }).toEqual({ status: 401, code: "INVALID_ATTESTATION" });
  }, 60_000);
});
