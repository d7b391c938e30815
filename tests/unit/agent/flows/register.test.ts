/**
 * The register flow (Phase A) called as a front end other than the CLI would call it: typed input, the agent's own
 * home and identity, a typed result with the secret as the gateway gave it (masking is the front end's), nothing
 * written to a terminal.
 */
import { describe, expect, test } from "bun:test";
import { readdir } from "node:fs/promises";
import { register } from "../../../../src/agent/flows/register.ts";
import { loopbackPortFor } from "../../../../src/agent/loopback.ts";
import { GW, cliFixture } from "../../../helpers/cli-harness.ts";

const fx = cliFixture();
const gateway = { base: GW, native: false };
const input = { target: gateway, providers: ["github"], scopes: [], requests: [], redirectUris: [] };

describe("register", () => {
  test("asks for every scope a provider offers, adds the loopback redirect URI and saves what the gateway answered", async () => {
    const agent = await fx.agent();
    const r = await register({ ...input, requests: [{ provider_id: "gitlab", scopes: ["api"] }], purpose: "triage" }, agent);
    const id = await agent.identity();
    expect(r).toEqual({
      gateway: GW,
      agent_id: id.agentId,
      already_registered: false,
      registration: {
        client_id: "ath_client1",
        client_secret: "ath_secret_s3cr3tvalue1",
        agent_status: "approved",
        approved_providers: [
          { provider_id: "gitlab", approved_scopes: ["api"], denied_scopes: [] },
          { provider_id: "github", approved_scopes: ["repo", "read:user"], denied_scopes: [] },
        ],
        approval_expires: "2099-01-01T00:00:00.000Z",
      },
    });
    const sent = fx.gw.requests.find((q) => q.path === "/ath/agents/register")!;
    expect(sent.body).toMatchObject({ agent_id: id.agentId, redirect_uris: ["http://127.0.0.1/callback", `http://127.0.0.1:${loopbackPortFor(id.agentId)}/callback`], purpose: "triage", developer: { name: "local", id: id.agentId } });
    const saved = (await fx.credentials()).gateways[GW].agents[id.agentId];
    expect(saved).toMatchObject({ ...r.registration, tokens: {}, pending: {}, exchanged: {} });
  });

  test("a second registration at a gateway without GET /ath/agents/status returns the saved one as already_registered, with nothing saved again", async () => {
    const agent = await fx.agent();
    const first = await register({ ...input, scopes: ["repo"] }, agent);
    const before = await fx.credentials();
    const again = await register({ ...input, providers: ["gitlab"] }, agent);
    // this scripted gateway has no DESIGN §17 extensions: nothing was read again (refreshed: false), nothing added
    expect(again).toEqual({ ...first, already_registered: true, refreshed: false, added: [], pending_providers: [] });
    expect(await fx.credentials()).toEqual(before);
  });

  test("gateway mode without a provider is a usage error before any request, key or file", async () => {
    const agent = await fx.agent();
    await expect(register({ ...input, providers: [] }, agent)).rejects.toMatchObject({ name: "ClientError", kind: "usage", code: "USAGE" });
    expect(fx.gw.requests).toEqual([]);
    expect(await readdir(fx.home.dir)).toEqual([]);
  });

  test("native mode registers for the service's own app with every scope it supports", async () => {
    const r = await register({ ...input, target: { base: GW, native: true }, providers: [] }, await fx.agent());
    expect(r.registration.approved_providers).toEqual([{ provider_id: "notes", approved_scopes: ["notes:read", "notes:write"], denied_scopes: [] }]);
  });
});
