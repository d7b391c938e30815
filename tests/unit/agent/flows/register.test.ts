/**
 * The register flow (Phase A) called as a front end other than the CLI would call it: typed input, the agent's own
 * home and identity, a typed result with the secret as the gateway gave it (masking is the front end's), nothing
 * written to a terminal.
 */
import { describe, expect, test } from "bun:test";
import { readdir } from "node:fs/promises";
import { register } from "../../../../src/agent/flows/register.ts";
import { loopbackPortFor } from "../../../../src/agent/loopback.ts";
import { GATEWAY as GW, cliOnGateway, githubAndGitlab } from "../../../helpers/cli-in-process.ts";

const fx = cliOnGateway({ scripted: githubAndGitlab });
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
        client_id: expect.stringMatching(/^ath_/),
        client_secret: expect.stringMatching(/^ath_secret_/),
        agent_status: "approved",
        approved_providers: [
          { provider_id: "gitlab", approved_scopes: ["api"], denied_scopes: [] },
          { provider_id: "github", approved_scopes: ["repo", "read:user"], denied_scopes: [] },
        ],
        approval_expires: expect.any(String),
      },
    });
    const sent = fx.sent.find((q) => q.path === "/ath/agents/register")!;
    expect(sent.body).toMatchObject({ agent_id: id.agentId, redirect_uris: ["http://127.0.0.1/callback", `http://127.0.0.1:${loopbackPortFor(id.agentId)}/callback`], purpose: "triage", developer: { name: "local", id: id.agentId } });
    const saved = (await fx.credentials()).gateways[GW].agents[id.agentId];
    expect(saved).toMatchObject({ ...r.registration, tokens: {}, pending: {}, exchanged: {} });
  });

  test("a second registration at a gateway without GET /ath/agents/status returns the saved one as already_registered, with nothing saved again", async () => {
    // the real gateway with its DESIGN §17 status route hidden: what a gateway without the extensions answers
    const withoutStatusEndpoint = (input: string | URL | Request, init?: RequestInit) =>
      new URL(new Request(input, init).url).pathname === "/ath/agents/status" ? Response.json({ code: "NOT_FOUND", message: "Not found" }, { status: 404, headers: { "x-ath-error": "NOT_FOUND" } }) : fx.fetch(input, init);
    const agent = await fx.agent({ fetch: withoutStatusEndpoint as never });
    const first = await register({ ...input, scopes: ["repo"] }, agent);
    const before = await fx.credentials();
    const again = await register({ ...input, providers: ["gitlab"] }, agent);
    // this gateway has no DESIGN §17 extensions: nothing was read again (refreshed: false), nothing added
    expect(again).toEqual({ ...first, already_registered: true, refreshed: false, added: [], pending_providers: [] });
    expect(await fx.credentials()).toEqual(before);
  });

  test("gateway mode without a provider is a usage error before any request, key or file", async () => {
    const agent = await fx.agent();
    await expect(register({ ...input, providers: [] }, agent)).rejects.toMatchObject({ name: "ClientError", kind: "usage", code: "USAGE" });
    expect(fx.sent).toEqual([]);
    expect(await readdir(fx.home.dir)).toEqual([]);
  });

  describe("on a native-mode gateway", () => {
    const native = cliOnGateway({ mode: "native" });
    test("native mode registers for the service's own app with every scope it supports", async () => {
      const r = await register({ ...input, target: { base: GW, native: true }, providers: [] }, await native.agent());
      expect(r.registration.approved_providers).toEqual([{ provider_id: "demo", approved_scopes: ["notes:read", "notes:write"], denied_scopes: [] }]);
    });
  });
});
