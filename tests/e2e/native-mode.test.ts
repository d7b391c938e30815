/**
 * `ath serve --mode native` through the compiled binary (DESIGN §7): one app — oidc-provider as its OAuth server, the
 * sample API (which checks tokens by introspection at oidc-provider) as its API — made ATH-native without changing
 * it. Discovery documents against the official JSON Schema, the flow with provider_id left out, /api and
 * /ath/proxy/{app_id}, RFC 7662 introspection, the start-up rule, and the CLI's native mode end to end.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { PATHS } from "../../src/protocol/index.ts";
import { attest, makeAgent } from "../helpers/attestations.ts";
import { call, consent, exchange } from "../helpers/agent.ts";
import { ath, ATH_BIN, ensureBinary } from "../helpers/cli-binary.ts";
import { expectError } from "../helpers/expect-error.ts";
import { tempDir } from "../helpers/net.ts";
import { officialSchemaErrors } from "../helpers/official-schema.ts";
import { proxyWireSuite } from "../helpers/proxy-wire.ts";
import { MAIL_SCOPES, NATIVE_APP, startNativeWorld, type World } from "../helpers/world.ts";

const APP = NATIVE_APP;
const INTROSPECTION_TOKEN = "introspection_e2e_token_0123456789";
let w: World;
let canary: ReturnType<typeof Bun.serve>;
const canaryHits: string[] = [];
let wireToken: string;

beforeAll(async () => {
  ensureBinary();
  canary = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: (req) => (canaryHits.push(req.url), new Response("canary")) });
  w = await startNativeWorld({
    extraArgs: ["--introspection-token", INTROSPECTION_TOKEN],
    scopeRules: { "mail:read": ["GET /v1/messages", "GET /v1/messages/**"], "mail:send": ["POST /v1/messages"] },
  });
}, 120_000);
afterAll(async () => {
  await canary?.stop(true);
  await w?.stop();
});

/** register and authorize with provider_id left out, the person consents, the code is exchanged: the token. */
async function nativeToken(scopes = ["mail:read"]) {
  const agent = await makeAgent();
  const reg = await call(`${w.baseUrl}${PATHS.register}`, {
    json: {
      agent_id: agent.agentId,
      agent_attestation: await attest(agent, w.baseUrl),
      developer: { name: "Native E2E", id: "dev-native" },
      requested_providers: [{ scopes: ["mail:read", "mail:send"] }],
    },
  });
  expect(reg.status).toBe(201);
  expect((reg.json.approved_providers as { provider_id: string }[])[0]!.provider_id).toBe(APP);
  const client = { client_id: String(reg.json.client_id), client_secret: String(reg.json.client_secret) };
  const auth = await call(`${w.baseUrl}${PATHS.authorize}`, {
    json: { client_id: client.client_id, agent_attestation: await attest(agent, w.baseUrl), scopes, state: "native-e2e-state-0123456789" },
  });
  expect(auth.status).toBe(200);
  const consented = await consent(String(auth.json.authorization_url));
  const token = await exchange(w.baseUrl, agent, client, { code: consented.code!, ath_session_id: String(auth.json.ath_session_id), json: true });
  expect(token.status).toBe(200);
  return { agent, client, token: token.json, accessToken: String(token.json.access_token) };
}

describe("discovery in native mode", () => {
  test("/.well-known/ath-app.json has exactly the fields of DESIGN §7 and validates against the official ServiceDiscoveryDocument", async () => {
    const r = await call(`${w.baseUrl}${PATHS.appDiscovery}`);
    expect(r.status).toBe(200);
    expect(officialSchemaErrors("ServiceDiscoveryDocument", r.json)).toEqual([]);
    expect(r.json).toEqual({
      ath_version: "0.1",
      app_id: APP,
      name: "Example Notes",
      auth: {
        type: "oauth2",
        authorization_endpoint: `${w.baseUrl}/ath/authorize`,
        token_endpoint: `${w.baseUrl}/ath/token`,
        registration_endpoint: `${w.baseUrl}/ath/agents/register`,
        scopes_supported: MAIL_SCOPES,
        agent_attestation_required: true,
      },
      api_base: `${w.baseUrl}/api`,
    });
  });

  test("/.well-known/ath.json keeps working, lists the one app, and validates against the official DiscoveryDocument", async () => {
    const r = await call(`${w.baseUrl}${PATHS.discovery}`);
    expect(officialSchemaErrors("DiscoveryDocument", r.json)).toEqual([]);
    expect((r.json.supported_providers as { provider_id: string }[]).map((p) => p.provider_id)).toEqual([APP]);
  });
});

describe("the flow and the app's API", () => {
  test("provider_id left out at register and authorize is the app's; the token is bound to it", async () => {
    const { token } = await nativeToken();
    expect(token.provider_id).toBe(APP);
    expect(token.effective_scopes).toEqual(["mail:read"]);
  });

  test("/api/{path} and /ath/proxy/{app_id}/{path} both reach the app's API with the upstream token, never the ATH token", async () => {
    const { agent, accessToken } = await nativeToken();
    w.api.clear();
    for (const path of ["/api/v1/messages?folder=inbox", `/ath/proxy/${APP}/v1/messages?folder=inbox`]) {
      const r = await call(`${w.baseUrl}${path}`, { headers: { authorization: `Bearer ${accessToken}`, "x-ath-agent-id": agent.agentId } });
      expect(r.status).toBe(200);
    }
    const seen = w.api.accepted();
    expect(seen.map((s) => `${s.method} ${s.path}${s.query}`)).toEqual(["GET /v1/messages?folder=inbox", "GET /v1/messages?folder=inbox"]);
    for (const s of seen) {
      expect(s.headers.authorization).not.toContain(accessToken);
      expect(s.headers["x-ath-agent-id"]).toBeUndefined();
    }
  });

  test("the proxy's rules hold on /api: scope_rules, another agent's id, a missing or revoked token, traversal", async () => {
    const { client, accessToken } = await nativeToken();
    const auth = { authorization: `Bearer ${accessToken}` };
    w.api.clear();
    expectError(await call(`${w.baseUrl}/api/v1/messages`, { json: { to: "x" }, headers: auth }), "SCOPE_NOT_APPROVED");
    expectError(await call(`${w.baseUrl}/api/v1/messages`, { headers: { ...auth, "x-ath-agent-id": "did:key:zSomeoneElse" } }), "AGENT_IDENTITY_MISMATCH");
    expectError(await call(`${w.baseUrl}/api/v1/messages`), "TOKEN_INVALID");
    expectError(await call(`${w.baseUrl}/api/v1%2F..%2Fadmin`, { headers: auth }), "INVALID_REQUEST");
    expect(w.api.requests).toEqual([]);
    await call(`${w.baseUrl}${PATHS.revoke}`, { json: { token: accessToken, ...client } });
    expectError(await call(`${w.baseUrl}/api/v1/messages`, { headers: auth }), "TOKEN_REVOKED");
  });
});

describe("POST /ath/introspect (RFC 7662) on the binary", () => {
  test("a live token is active and bound to the app; revoked it is exactly {active:false}; without the token 401", async () => {
    const { client, accessToken, agent } = await nativeToken();
    const introspect = (token: string, headers: Record<string, string> = { authorization: `Bearer ${INTROSPECTION_TOKEN}` }) =>
      call(`${w.baseUrl}${PATHS.introspect}`, { form: { token }, headers });
    const live = await introspect(accessToken);
    expect(live.json).toMatchObject({ active: true, token_type: "Bearer", scope: "mail:read", aud: APP, client_id: client.client_id, agent_id: agent.agentId });
    expectError(await introspect(accessToken, {}), "UNAUTHORIZED");
    await call(`${w.baseUrl}${PATHS.revoke}`, { json: { token: accessToken, ...client } });
    expect((await introspect(accessToken)).json).toEqual({ active: false });
  });
});

describe("native mode needs exactly one app", () => {
  test("zero or two providers stop the start with exit 2, naming the file and the count", async () => {
    const dir = await tempDir("native-start");
    try {
      const entry = { display_name: "A", available_scopes: ["a"], authorize_endpoint: "https://a.example/authorize", token_endpoint: "https://a.example/token", client_id: "c", client_secret: "s" };
      for (const [providers, count] of [[{}, "0 providers"], [{ a: entry, b: entry }, "2 providers"]] as const) {
        const file = join(dir.path, `providers-${count.replace(" ", "-")}.json`);
        await Bun.write(file, JSON.stringify(providers));
        const p = Bun.spawn([ATH_BIN, "serve", "--mode", "native", "--providers", file, "--port", "0", "--data-dir", join(dir.path, "data")], {
          env: { ...process.env, ATH_HOME: dir.path, NO_COLOR: "1" },
          stdout: "pipe",
          stderr: "pipe",
        });
        const [code, err] = await Promise.all([p.exited, new Response(p.stderr).text()]);
        expect(code).toBe(2);
        expect(err).toContain(file);
        expect(err).toContain(count);
      }
    } finally {
      await dir.remove();
    }
  });
});

describe("the CLI in native mode (-m native -s <url>), end to end", () => {
  test("discover → register → authorize → consent → token → proxy → revoke, the provider being the app", async () => {
    const home = await tempDir("native-cli");
    try {
      const native = ["-m", "native", "-s", w.baseUrl];
      const discovered = await ath(home.path, ["discover", ...native, "--format", "json"]);
      expect(discovered.code).toBe(0);
      expect(discovered.json().app_id).toBe(APP);
      const registered = await ath(home.path, ["register", ...native, "--scopes", "mail:read", "--format", "json"]);
      expect(registered.code).toBe(0);
      const authorized = await ath(home.path, ["authorize", ...native, "--scopes", "mail:read", "--no-wait", "--format", "json"]);
      expect(authorized.code).toBe(0);
      const consented = await consent(String(authorized.json().authorization_url));
      const token = await ath(home.path, ["token", ...native, "--code", consented.code!, "--format", "json"]);
      expect(token.code).toBe(0);
      w.api.clear();
      const proxied = await ath(home.path, ["proxy", ...native, "GET", "/v1/messages", "--format", "json"]);
      expect(proxied.code).toBe(0);
      expect(proxied.json().status).toBe(200);
      expect(w.api.accepted().map((r) => r.path)).toEqual(["/v1/messages"]);
      const revoked = await ath(home.path, ["revoke", ...native, "--format", "json"]);
      expect(revoked.code).toBe(0);
      const after = await ath(home.path, ["proxy", ...native, "GET", "/v1/messages", "--format", "json"]);
      expect(after.code).not.toBe(0);
    } finally {
      await home.remove();
    }
  });
});

describe("/api on the real HTTP stack: the gateway mode's wire tests, at the native mount", () => {
  beforeAll(async () => {
    wireToken = (await nativeToken(["mail:read"])).accessToken;
  });
  proxyWireSuite(() => ({
    port: w.gw.port,
    upstreamRequests: () => w.api.requests,
    canaryHits,
    canaryPort: canary.port!,
    plain: { prefix: PATHS.nativeApi, token: wireToken },
  }));
});
