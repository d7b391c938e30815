/** Regression guards for the security review's findings, against a running `ath serve`: proxy scope_rules bypasses, redirect URI schemes, link previewers, consent_screen: false. */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { authorize, call, consent, fullFlow, register } from "../helpers/agent.ts";
import { makeAgent } from "../helpers/attestations.ts";
import { Browser } from "../helpers/browser.ts";
import { rawRequest } from "../helpers/raw-http.ts";
import { startWorld, type World } from "../helpers/world.ts";

let w: World;
let rules: Awaited<ReturnType<typeof fullFlow>>;
beforeAll(async () => {
  w = await startWorld({
    providers: (auth, api) => ({
      silent: {
        display_name: "Silent",
        available_scopes: ["openid", "mail:read"],
        authorize_endpoint: auth.authorizeEndpoint,
        token_endpoint: auth.tokenEndpoint,
        api_base_url: api.baseUrl,
        client_id: auth.postClient.client_id,
        client_secret: auth.postClient.client_secret,
        consent_screen: false,
      },
    }),
  });
  rules = await fullFlow(w.baseUrl, { provider_id: "mailrules", scopes: ["mail:read"] });
}, 30_000);
afterAll(async () => {
  await w?.stop();
});

describe("review — proxy scope_rules bypasses", () => {
  test("method- and URL-override headers never reach the upstream (they would re-route a request scope_rules allowed)", async () => {
    const before = w.api.requests.length;
    const overrides = {
      "x-http-method-override": "DELETE",
      "x-http-method": "DELETE",
      "x-method-override": "DELETE",
      "x-original-url": "/v1/admin",
      "x-rewrite-url": "/v1/admin",
    };
    const r = await call(`${w.baseUrl}/ath/proxy/mailrules/v1/messages`, { headers: { authorization: `Bearer ${rules.accessToken}`, ...overrides } });
    const seen = w.api.requests.slice(before)[0];
    // either refused, or forwarded without the override headers
    if (r.status < 400) for (const h of Object.keys(overrides)) expect(seen?.headers[h]).toBeUndefined();
    else expect(seen).toBeUndefined();
  });

  test("a path scope_rules allow only through a `..;` segment is refused, not forwarded for the upstream to normalise", async () => {
    const before = w.api.requests.length;
    // rule: mail:read → GET /v1/messages/**; Tomcat/Jetty/Spring read /v1/messages/..;/echo as /v1/echo
    const r = await rawRequest(w.gw.port, "GET", "/ath/proxy/mailrules/v1/messages/..;/echo", { authorization: `Bearer ${rules.accessToken}` });
    expect(r.status).toBe(400);
    expect(w.api.requests.slice(before)).toEqual([]);
  });
});

describe("review — Phase A/B", () => {
  test("redirect_uris with script-bearing schemes are refused at registration", async () => {
    for (const uri of ["javascript:alert(document.domain)//", "data:text/html,<script>alert(1)</script>"]) {
      const r = await register(w.baseUrl, await makeAgent(), { providers: [{ provider_id: "mail", scopes: ["mail:read"] }], redirect_uris: [uri] });
      expect(r.status).toBe(400);
    }
  });

  test("with consent_screen: false the provider is told to ask the person (prompt=consent): its remembered consent is for the gateway's one client, not for this agent", async () => {
    const agent = await makeAgent(); // any self-registered agent
    const reg = await register(w.baseUrl, agent, { providers: [{ provider_id: "silent", scopes: ["mail:read"] }] });
    const a = await authorize(w.baseUrl, agent, { client_id: String(reg.json.client_id) }, { provider_id: "silent", scopes: ["mail:read"] });
    const r = await fetch(String(a.json.authorization_url), { redirect: "manual" });
    expect(r.status).toBe(303);
    expect(new URL(String(r.headers.get("location"))).searchParams.get("prompt")).toBe("consent");
  });
});
