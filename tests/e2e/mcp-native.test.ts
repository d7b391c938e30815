/**
 * `ath mcp -m native -s <service>`: the tools against one ATH-native service (`dist/ath serve --mode native` fronting
 * oidc-provider and the sample API, DESIGN §7). The app is the one provider; ath_request calls its api_base directly,
 * and the service's own token refusals are tool errors with their ATH code, as the gateway's are.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { consent } from "../helpers/agent.ts";
import { athError, startHost, type Host } from "../helpers/mcp-host.ts";
import { tempDir } from "../helpers/net.ts";
import { MAIL_SCOPES, startWorld, type World } from "../helpers/world.ts";

const APP = "com.example.notes";
let w: World;
let h: Host;
let home: { path: string; remove: () => Promise<void> };

beforeAll(async () => {
  w = await startWorld({
    binary: true,
    onlyProviders: true,
    extraArgs: ["--mode", "native"],
    providers: (auth, api) => ({
      [APP]: {
        display_name: "Example Notes",
        available_scopes: MAIL_SCOPES,
        authorize_endpoint: auth.authorizeEndpoint,
        token_endpoint: auth.tokenEndpoint,
        api_base_url: api.baseUrl,
        client_id: auth.basicClient.client_id,
        client_secret: auth.basicClient.client_secret,
        token_endpoint_auth_method: "client_secret_basic",
        scope_rules: { "mail:read": ["GET /v1/messages"], "mail:send": ["POST /v1/messages"] },
      },
    }),
  });
  home = await tempDir("mcp-native");
  h = await startHost({ home: home.path, args: ["-m", "native", "-s", w.baseUrl] });
}, 120_000);
afterAll(async () => {
  await h?.close();
  await home?.remove();
  await w?.stop();
});

describe("ath mcp in native mode", () => {
  test("ath_providers lists the service's one app; the consent flow and ath_request against its api_base work", async () => {
    const providers = await h.call("ath_providers");
    expect(providers.structuredContent).toMatchObject({ gateway: w.baseUrl, registered: false, providers: [{ provider_id: APP, display_name: "Example Notes", available_scopes: MAIL_SCOPES }] });
    const started = await h.call("ath_authorize", { provider: APP, scopes: ["openid", "mail:read"] });
    expect(started.structuredContent).toMatchObject({ status: "pending", provider_id: APP, registered_now: true });
    await consent(String(started.structuredContent?.authorization_url));
    expect((await h.call("ath_token", { provider: APP, wait_seconds: 30 })).structuredContent).toMatchObject({ status: "authorized", provider_id: APP });
    w.api.clear();
    const r = await h.call("ath_request", { provider: APP, method: "GET", path: "/v1/messages" });
    expect(r.structuredContent).toMatchObject({ status: 200, body: { messages: [{ id: "m1", subject: "hello" }] } });
    expect(w.api.requests.map((q) => q.path)).toEqual(["/v1/messages"]);
  });

  test("the service's own refusal (scope_rules) is a tool error with its ATH code; the upstream is never called", async () => {
    w.api.clear();
    const r = await h.call("ath_request", { provider: APP, method: "POST", path: "/v1/messages", body: { to: "x" } });
    expect(athError(r)).toMatchObject({ code: "SCOPE_NOT_APPROVED", status: 403 });
    expect(w.api.requests).toEqual([]);
  });
});
