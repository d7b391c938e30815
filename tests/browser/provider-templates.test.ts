/**
 * DESIGN §11 as a person lives it, in Chromium, for github, slack and notion: the compiled `ath serve` with each
 * template pointed at a mock of the provider, the gateway's consent page showing the template's scope descriptions,
 * the provider's own page (Authorize / Cancel), and the agent's redirect — then the token and a proxied call, with
 * the mock's record showing provider-correct requests (tests/e2e/provider-templates.test.ts does the rest over HTTP).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Browser } from "playwright-core";
import { authorize, exchange, register, type ClientCredentials } from "../helpers/agent.ts";
import { REGISTERED_REDIRECT, startAgentRedirect, type AgentRedirect } from "../helpers/agent-redirect.ts";
import { makeAgent, type TestAgent } from "../helpers/attestations.ts";
import { closeContexts, freshPage, screenshots, sharedChromium } from "../helpers/chromium.ts";
import { expectError } from "../helpers/expect-error.ts";
import { randomString } from "../helpers/net.ts";
import { clickAndWait, consentInChromium, openConsent, providerButton } from "../helpers/person.ts";
import { TEMPLATES } from "../../src/gateway/providers/templates/index.ts";
import { checkAuthorizeAndToken, proxiedCall, recordedUserId, startTemplateWorld, TEMPLATE_CASES, type TemplateWorld } from "../helpers/template-world.ts";

const IDS = ["github", "slack", "notion"];

let w: TemplateWorld;
let browser: Browser;
let agent: TestAgent;
let client: ClientCredentials;
let receiver: AgentRedirect;

beforeAll(async () => {
  [w, browser] = await Promise.all([startTemplateWorld(IDS, { binary: true }), sharedChromium()]);
  receiver = startAgentRedirect();
  agent = await makeAgent();
  const r = await register(w.baseUrl, agent, {
    providers: IDS.map((id) => ({ provider_id: id, scopes: TEMPLATE_CASES[id]!.scopes })),
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

async function start(id: string) {
  const r = await authorize(w.baseUrl, agent, client, { provider_id: id, scopes: TEMPLATE_CASES[id]!.scopes, user_redirect_uri: receiver.uri });
  if (r.status !== 200) throw new Error(r.text);
  return { url: String(r.json.authorization_url), sessionId: String(r.json.ath_session_id), state: r.state };
}

for (const id of IDS) {
  const c = TEMPLATE_CASES[id]!;
  describe(`template ${id}: consent in Chromium`, () => {
    test("the consent page describes the template's scopes; Authorize at the provider sends the agent its code; the token works at the proxy", async () => {
      const s = await start(id);
      const { context, page } = await freshPage(browser);
      try {
        await openConsent(page, s.url);
        const consentText = String(await page.textContent("body"));
        expect(consentText).toContain(TEMPLATES[id]!.entry.display_name);
        for (const scope of c.scopes) expect(consentText).toContain(TEMPLATES[id]!.entry.scope_descriptions![scope]!);
        await screenshots(page, `template-consent-${id}`);
        await clickAndWait(page, "Approve");
        expect(new URL(page.url()).pathname).toStartWith("/__mock/consent/");
        expect(await page.textContent("h1")).toContain(TEMPLATES[id]!.entry.display_name);
        const before = receiver.received.length;
        await clickAndWait(page, providerButton(page, "approve"));
        expect(page.url()).toStartWith(receiver.uri);
        const q = receiver.received[before]!;
        expect({ state: q.get("state"), session: q.get("ath_session_id") }).toEqual({ state: s.state, session: s.sessionId });

        const token = await exchange(w.baseUrl, agent, client, { code: String(q.get("code")), ath_session_id: s.sessionId });
        expect(token.status).toBe(200);
        expect(token.json.effective_scopes).toEqual(c.scopes);
        checkAuthorizeAndToken(w.mocks[id]!, c);
        expect(recordedUserId(w, id)).toBe(c.userId);
        const res = await proxiedCall(w, id, String(token.json.access_token));
        expect({ status: res.status, text: res.text }).toEqual({ status: 200, text: expect.stringContaining(c.api.answer) });
        const seen = w.mocks[id]!.core.requests.at(-1)!;
        for (const [name, value] of Object.entries(c.apiHeaders ?? {})) expect({ [name]: seen.headers.get(name) }).toEqual({ [name]: value });
      } finally {
        await context.close();
      }
    });

    test("Cancel at the provider's page sends error=access_denied to the agent, and /ath/token answers 403 USER_DENIED", async () => {
      const s = await start(id);
      const { context, page } = await freshPage(browser);
      try {
        const tokensBefore = w.mocks[id]!.core.requestsTo("token").length;
        const before = receiver.received.length;
        await consentInChromium(page, s.url, { provider: "deny" });
        expect(page.url()).toStartWith(receiver.uri);
        const q = receiver.received[before]!;
        expect({ error: q.get("error"), state: q.get("state"), code: q.has("code") }).toEqual({ error: "access_denied", state: s.state, code: false });
        expectError(await exchange(w.baseUrl, agent, client, { code: `ath_code_${randomString()}`, ath_session_id: s.sessionId }), "USER_DENIED");
        expect(w.mocks[id]!.core.requestsTo("token").length).toBe(tokensBefore);
      } finally {
        await context.close();
      }
    });
  });
}
