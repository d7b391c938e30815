/** GET /.well-known/ath.json and GET /health in process (DESIGN §3 "Discovery"): every provider, absolute URLs, no secret. */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { openProvider, requireProvider } from "../../../../src/gateway/domain/providers.ts";
import { DiscoveryDocument } from "../../../../src/protocol/index.ts";
import { call } from "../../../helpers/agent.ts";
import { ADMIN_TOKEN, BASE, scriptedGateway, type InProcess } from "../../../helpers/in-process.ts";
import type { ScriptedProvider } from "../../../helpers/scripted-provider.ts";

let g: InProcess;
let p: ScriptedProvider;
beforeEach(async () => {
  ({ g, p } = await scriptedGateway((p) => ({
    mail: p.config({ display_name: "Sample Mail", available_scopes: ["openid", "offline_access", "mail:read", "mail:send"] }),
    calendar: p.config({ display_name: "Sample Calendar", available_scopes: ["calendar:read"], client_secret: "calendar-secret" }),
  })));
});
afterEach(() => g.close());

describe("discovery", () => {
  test("GET /.well-known/ath.json lists every provider and absolute endpoint URLs, and no secret", async () => {
    const r = await call(`${BASE}/.well-known/ath.json`, { fetch: g.fetch });
    expect(r.status).toBe(200);
    const doc = DiscoveryDocument.parse(r.json);
    expect(doc.ath_version).toBe("0.1");
    expect(doc.agent_registration_endpoint).toBe(`${BASE}/ath/agents/register`);
    expect(doc.supported_providers.find((x) => x.provider_id === "mail")).toEqual({
      provider_id: "mail",
      display_name: "Sample Mail",
      available_scopes: ["openid", "offline_access", "mail:read", "mail:send"],
      auth_mode: "OAUTH2",
      agent_approval_required: true,
    });
    expect(doc.supported_providers.map((x) => x.provider_id).sort()).toEqual(["calendar", "demo", "mail"]);
    expect(doc.endpoints).toEqual({
      register: `${BASE}/ath/agents/register`,
      authorize: `${BASE}/ath/authorize`,
      token: `${BASE}/ath/token`,
      revoke: `${BASE}/ath/revoke`,
      proxy: `${BASE}/ath/proxy`,
    });
    const demo = await openProvider(g.gw, await requireProvider(g.gw, "demo"));
    for (const secret of [p.clientSecret, "calendar-secret", demo.config.client_secret, ADMIN_TOKEN]) {
      expect(r.text).not.toContain(secret);
    }
  });

  test("GET /health answers {status: ok, version}", async () => {
    const r = await call(`${BASE}/health`, { fetch: g.fetch });
    expect({ status: r.status, body: r.json }).toEqual({ status: 200, body: { status: "ok", version: "0.0.0-test" } });
  });
});
