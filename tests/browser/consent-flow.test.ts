/**
 * Phase B as a person lives it, in Chromium, against the compiled `dist/ath serve --demo` with two upstreams: the
 * real authorization server (oidc-provider, provider `mail`) and the built-in sandbox (provider `demo`). Approve and
 * Deny are real clicks; the agent's side (register, authorize, token, proxy) is plain HTTP.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Browser } from "playwright-core";
import { authorize, call, exchange, register, type ClientCredentials } from "../helpers/agent.ts";
import { makeAgent, type TestAgent } from "../helpers/attestations.ts";
import { expectError } from "../helpers/expect-error.ts";
import { randomString } from "../helpers/net.ts";
import { startWorld, type World } from "../helpers/world.ts";
import { REGISTERED_REDIRECT, startAgentRedirect, type AgentRedirect } from "../helpers/agent-redirect.ts";
import { closeContexts, freshPage, interceptRequests, screenshots, sharedChromium } from "../helpers/chromium.ts";
import { clickAndWait, consentInChromium, openConsent, providerButton } from "../helpers/person.ts";

interface Target {
  upstream: string;
  provider: string;
  scopes: string[];
  /** A proxy path the scopes allow, and a piece of what the upstream answers there. */
  apiPath: string;
  apiAnswer: string;
}

const TARGETS: Target[] = [
  { upstream: "the real upstream (oidc-provider)", provider: "mail", scopes: ["openid", "mail:read"], apiPath: "v1/messages", apiAnswer: '"subject":"hello"' },
  { upstream: "the --demo sandbox", provider: "demo", scopes: ["notes:read"], apiPath: "notes", apiAnswer: "Welcome to Demo Notes" },
];

let w: World;
let browser: Browser;
let agent: TestAgent;
let client: ClientCredentials;
let receiver: AgentRedirect;

beforeAll(async () => {
  [w, browser] = await Promise.all([startWorld({ binary: true, extraArgs: ["--demo"] }), sharedChromium()]);
  receiver = startAgentRedirect();
  agent = await makeAgent();
  const r = await register(w.baseUrl, agent, {
    providers: TARGETS.map((t) => ({ provider_id: t.provider, scopes: t.scopes })),
    redirect_uris: [REGISTERED_REDIRECT],
  });
  if (r.status !== 201) throw new Error(r.text);
  client = { client_id: String(r.json.client_id), client_secret: String(r.json.client_secret) };
});
afterAll(async () => {
  await closeContexts(browser);
  receiver?.stop();
  await w?.stop();
});

async function start(t: Target, redirect: boolean) {
  const r = await authorize(w.baseUrl, agent, client, {
    provider_id: t.provider,
    scopes: t.scopes,
    ...(redirect ? { user_redirect_uri: receiver.uri } : {}),
  });
  if (r.status !== 200) throw new Error(r.text);
  return { url: String(r.json.authorization_url), sessionId: String(r.json.ath_session_id), state: r.state };
}

async function tokenAndProxy(t: Target, code: string, sessionId: string): Promise<string> {
  const token = await exchange(w.baseUrl, agent, client, { code, ath_session_id: sessionId });
  expect(token.status).toBe(200);
  expect(token.json.effective_scopes).toEqual(t.scopes);
  const api = await call(`${w.baseUrl}/ath/proxy/${t.provider}/${t.apiPath}`, { headers: { authorization: `Bearer ${String(token.json.access_token)}` } });
  expect(api.status).toBe(200);
  return api.text;
}

for (const t of TARGETS) {
  describe(`consent in Chromium against ${t.upstream}`, () => {
    test("Approve, then the provider's approval, sends the agent its code at its redirect URI; the code buys a token that works at the proxy", async () => {
      const s = await start(t, true);
      const { context, page } = await freshPage(browser);
      try {
        await openConsent(page, s.url);
        await screenshots(page, `consent-${t.provider}`);
        await clickAndWait(page, "Approve");
        if (t.provider === "demo") await screenshots(page, "demo-sign-in");
        const before = receiver.received.length;
        await clickAndWait(page, providerButton(page, "approve"));
        expect(page.url()).toStartWith(receiver.uri);
        expect(await page.textContent("body")).toContain("The agent received the answer.");
        const q = receiver.received[before];
        expect(q?.get("state")).toBe(s.state);
        expect(q?.get("ath_session_id")).toBe(s.sessionId);
        expect(q?.get("code")).toStartWith("ath_code_");
        expect(await tokenAndProxy(t, String(q?.get("code")), s.sessionId)).toContain(t.apiAnswer);
      } finally {
        await context.close();
      }
    });

    test("without a redirect URI the result page shows the code and the session, and the agent can exchange them", async () => {
      const s = await start(t, false);
      const { context, page } = await freshPage(browser);
      try {
        const response = await consentInChromium(page, s.url);
        expect(response?.status()).toBe(200);
        expect(new URL(page.url()).pathname).toBe("/ath/callback");
        await expect(page.getByRole("heading", { name: "Access approved" }).isVisible()).resolves.toBe(true);
        const pre = await page.locator("pre").allTextContents();
        const code = pre.find((p) => p.startsWith("ath_code_"));
        expect(pre).toContain(s.sessionId);
        expect(pre.some((p) => p.startsWith("ath token ") && p.includes(`--session ${s.sessionId}`))).toBe(true);
        await screenshots(page, `result-${t.provider}`);
        expect(await tokenAndProxy(t, String(code), s.sessionId)).toContain(t.apiAnswer);
      } finally {
        await context.close();
      }
    });

    test("Deny on the consent page shows the denied page, and the agent later gets 403 USER_DENIED at /ath/token", async () => {
      const s = await start(t, false);
      const { context, page } = await freshPage(browser);
      try {
        const response = await consentInChromium(page, s.url, { gateway: "deny" });
        expect(response?.status()).toBe(200);
        await expect(page.getByRole("heading", { name: "Access denied" }).isVisible()).resolves.toBe(true);
        expect(await page.textContent("body")).not.toContain("ath_code_");
        await screenshots(page, `denied-${t.provider}`);
        const token = await exchange(w.baseUrl, agent, client, { code: `ath_code_${randomString()}`, ath_session_id: s.sessionId });
        expectError(token, "USER_DENIED");
      } finally {
        await context.close();
      }
    });

    test("denying at the provider's own page sends error=access_denied to the agent, and /ath/token answers 403 USER_DENIED", async () => {
      const s = await start(t, true);
      const { context, page } = await freshPage(browser);
      try {
        const before = receiver.received.length;
        await consentInChromium(page, s.url, { provider: "deny" });
        expect(page.url()).toStartWith(receiver.uri);
        const q = receiver.received[before];
        expect(q?.get("error")).toBe("access_denied");
        expect(q?.get("state")).toBe(s.state);
        expect(q?.has("code")).toBe(false);
        const token = await exchange(w.baseUrl, agent, client, { code: `ath_code_${randomString()}`, ath_session_id: s.sessionId });
        expectError(token, "USER_DENIED");
      } finally {
        await context.close();
      }
    });

    test("the provider's callback replayed in another browser context, without the binding cookie, is refused with a 400 page and no code", async () => {
      const s = await start(t, false);
      const first = await freshPage(browser);
      const second = await freshPage(browser);
      try {
        await openConsent(first.page, s.url);
        await clickAndWait(first.page, "Approve");
        // the provider's redirect to /ath/callback is caught in the first browser and carried to the second
        const held = await interceptRequests(first.page, "*/ath/callback*");
        await first.page.getByRole("button", { name: providerButton(first.page, "approve"), exact: true }).click();
        const callbackUrl = await held.first;
        await held.stop();
        expect(new URL(callbackUrl).searchParams.get("code")).toBeTruthy();

        const replay = await second.page.goto(callbackUrl);
        expect(replay?.status()).toBe(400);
        await expect(second.page.getByRole("heading", { name: "Finish this in the browser where you opened the link" }).isVisible()).resolves.toBe(true);
        const body = String(await second.page.textContent("body"));
        expect(body).toContain("STATE_MISMATCH");
        // one instruction, not a choice
        expect(body).toContain("Ask the agent for a new link and open it in this browser.");
        expect(body).not.toContain("ath_code_");
        await screenshots(second.page, `error-replayed-callback-${t.provider}`);

        // the refusal was about the browser: the one that opened the link still completes the flow
        const own = await first.page.goto(callbackUrl);
        expect(own?.status()).toBe(200);
        const code = (await first.page.locator("pre").allTextContents()).find((p) => p.startsWith("ath_code_"));
        expect(await tokenAndProxy(t, String(code), s.sessionId)).toContain(t.apiAnswer);
      } finally {
        await first.context.close();
        await second.context.close();
      }
    });
  });
}
