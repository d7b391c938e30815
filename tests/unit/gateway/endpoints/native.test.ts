/**
 * Native mode (DESIGN §7) in process: the sandbox provider is the app. Its discovery document, provider_id defaulting
 * to the app id, and its API under /api — the proxy without the provider segment.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { PATHS, ServiceDiscoveryDocument } from "../../../../src/protocol/index.ts";
import { makeAgent } from "../../../helpers/attestations.ts";
import { expectError } from "../../../helpers/expect-error.ts";
import { asError, BASE, inProcessGateway, tokenFor, type InProcess } from "../../../helpers/in-process.ts";

let g: InProcess;
afterEach(() => g.close());

describe("native mode", () => {
  beforeEach(async () => {
    g = await inProcessGateway({ mode: "native" });
  });

  test("/.well-known/ath-app.json describes the app: its id, name, scopes, ath's endpoints and {base_url}/api", async () => {
    const res = await g.fetch(PATHS.appDiscovery);
    expect(res.status).toBe(200);
    const doc = ServiceDiscoveryDocument.parse(await res.json());
    expect(doc).toEqual({
      ath_version: "0.1",
      app_id: "demo",
      name: "Demo Notes (sandbox)",
      auth: {
        type: "oauth2",
        authorization_endpoint: `${BASE}/ath/authorize`,
        token_endpoint: `${BASE}/ath/token`,
        registration_endpoint: `${BASE}/ath/agents/register`,
        scopes_supported: ["notes:read", "notes:write"],
        agent_attestation_required: true,
      },
      api_base: `${BASE}/api`,
    });
  });

  test("/.well-known/ath.json still lists the one provider, so gateway-mode clients work too", async () => {
    const doc = (await (await g.fetch(PATHS.discovery)).json()) as { supported_providers: { provider_id: string }[] };
    expect(doc.supported_providers.map((p) => p.provider_id)).toEqual(["demo"]);
  });

  test("register and authorize may leave provider_id out: it is the app's; the token is bound to the app", async () => {
    const { json } = await tokenFor(g, await makeAgent(), { provider_id: null });
    expect(json.provider_id).toBe("demo");
    expect(json.effective_scopes).toEqual(["notes:read"]);
  });

  test("/api/{path} and /ath/proxy/{app_id}/{path} reach the same API with the same rules", async () => {
    const { accessToken } = await tokenFor(g, await makeAgent());
    const auth = { authorization: `Bearer ${accessToken}` };
    const viaApi = await g.fetch("/api/notes", { headers: auth });
    const viaProxy = await g.fetch("/ath/proxy/demo/notes", { headers: auth });
    expect(viaApi.status).toBe(200);
    expect(await viaApi.json()).toEqual(await viaProxy.json());
    // the token has notes:read only: the sandbox's scope_rules refuse a write on both paths alike
    for (const path of ["/api/notes", "/ath/proxy/demo/notes"]) {
      const write = await g.fetch(path, { method: "POST", headers: { ...auth, "content-type": "application/json" }, body: "{}" });
      expectError(await asError(write), "SCOPE_NOT_APPROVED");
    }
    expectError(await asError(await g.fetch("/api/notes")), "TOKEN_INVALID");
    expectError(await asError(await g.fetch("/api/notes%2F..%2F..%2Foauth%2Ftoken", { headers: auth })), "INVALID_REQUEST");
  });
});

describe("gateway mode has no native routes", () => {
  beforeEach(async () => {
    g = await inProcessGateway();
  });

  test("/.well-known/ath-app.json and /api are 404 NOT_FOUND", async () => {
    expectError(await asError(await g.fetch(PATHS.appDiscovery)), "NOT_FOUND");
    expectError(await asError(await g.fetch("/api/notes")), "NOT_FOUND");
  });
});
