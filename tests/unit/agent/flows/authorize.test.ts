/**
 * The authorize flows (Phase B) without the CLI, against the real gateway in process: `authorize` starts a session and saves it as pending;
 * `authorizeAndWait` hands the URL over before it waits, exchanges the code the loopback redirect brings, and
 * leaves no pending session behind when the wait is cancelled.
 */
import { describe, expect, test } from "bun:test";
import { abandon, authorize, authorizeAndWait } from "../../../../src/agent/flows/authorize.ts";
import { GATEWAY as GW, cliOnGateway, githubAndGitlab } from "../../../helpers/cli-in-process.ts";

const fx = cliOnGateway({ scripted: githubAndGitlab, provider: "github", scopes: "repo,read:user" });
const target = { base: GW, native: false };

describe("authorize", () => {
  test("starts a session with the scopes approved at registration and saves it as pending", async () => {
    await fx.registered();
    const agent = await fx.agent();
    const a = await authorize({ target, provider: "github", scopes: [], resource: "https://api.example/" }, agent);
    expect(a).toEqual({
      gateway: GW,
      agent_id: (await agent.identity()).agentId,
      provider_id: "github",
      scopes: ["repo", "read:user"],
      authorization_url: expect.stringContaining(`${GW}/ath/consent/`),
      ath_session_id: expect.stringMatching(/^ath_sess_/),
    });
    const sent = fx.sent.find((q) => q.path === "/ath/authorize")!;
    expect(sent.body).toMatchObject({ provider_id: "github", scopes: ["repo", "read:user"], resource: "https://api.example/" });
    expect(await fx.pendingIds()).toEqual([a.ath_session_id]);
    await abandon(a, agent);
    expect(await fx.pendingIds()).toEqual([]);
  });

  test("before registration it is NOT_REGISTERED (config) and sends nothing", async () => {
    await expect(authorize({ target, provider: "github", scopes: [] }, await fx.agent())).rejects.toMatchObject({ kind: "config", code: "NOT_REGISTERED" });
    expect(fx.sent).toEqual([]);
  });
});

describe("authorizeAndWait", () => {
  test("shows the URL through onStarted, then exchanges the redirect's code and saves the token", async () => {
    await fx.registered();
    const agent = await fx.agent();
    const r = await authorizeAndWait(
      {
        target,
        provider: "github",
        scopes: ["repo"],
        timeoutMs: 30_000,
        onStarted: (a) => {
          expect(a.user_redirect_uri).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/callback$/);
          // the person consents; their browser lands on the loopback redirect URI with the code
          void fx.consentToLoopback(a.authorization_url);
        },
      },
      agent,
    );
    expect(r).toMatchObject({ already_exchanged: false, response: { provider_id: "github", effective_scopes: ["repo"] }, saved: { provider_id: "github" } });
    const saved = (await fx.credentials()).gateways[GW].agents[(await agent.identity()).agentId];
    expect(saved.tokens.github.access_token).toBe(r.response.access_token);
    expect(saved.pending).toEqual({});
  });

  test("a cancelled wait rejects CANCELLED, forgets the pending session and exchanges nothing", async () => {
    await fx.registered();
    const stop = new AbortController();
    const waiting = authorizeAndWait({ target, provider: "github", scopes: [], timeoutMs: 30_000, signal: stop.signal, onStarted: () => stop.abort() }, await fx.agent());
    await expect(waiting).rejects.toMatchObject({ kind: "failure", code: "CANCELLED" });
    expect(await fx.pendingIds()).toEqual([]);
    expect(fx.sent.some((q) => q.path === "/ath/token")).toBe(false);
  });
});
