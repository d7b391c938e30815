/**
 * GET /ath/callback in process (DESIGN §3 Phase B step 3): only the browser that answered the consent page may bring
 * the provider's answer back; a code is exchanged once; the agent gets its code at its redirect URI or on the result
 * page, and a denial (on the consent page or at the provider) reaches the agent as access_denied and USER_DENIED.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { authorize, consent, exchange, registeredAgent, type ClientCredentials } from "../../../helpers/agent.ts";
import type { TestAgent } from "../../../helpers/attestations.ts";
import { formWithButton } from "../../../helpers/browser.ts";
import { expectError } from "../../../helpers/expect-error.ts";
import { BASE, scriptedGateway, type InProcess } from "../../../helpers/in-process.ts";
import { randomString } from "../../../helpers/net.ts";
import type { ScriptedProvider } from "../../../helpers/scripted-provider.ts";

const REDIRECT = "http://127.0.0.1/callback";

let g: InProcess;
let p: ScriptedProvider;
let agent: TestAgent;
let client: ClientCredentials;
beforeEach(async () => {
  ({ g, p } = await scriptedGateway((p) => ({ mail: p.config() })));
  ({ agent, client } = await registeredAgent(g, {
    providers: [
      { provider_id: "mail", scopes: ["mail:read"] },
      { provider_id: "demo", scopes: ["notes:read"] },
    ],
    redirect_uris: [REDIRECT],
  }));
});
afterEach(() => g.close());

const mailRead = { provider_id: "mail", scopes: ["mail:read"] };
const atCallback = (u: URL) => u.href.startsWith(`${BASE}/ath/callback`);

describe("Phase B — GET /ath/callback, the code for the agent", () => {
  test("a full consent redirects to the agent's redirect URI with code, the agent's state and the session id", async () => {
    const r = await authorize(g, agent, client, { ...mailRead, user_redirect_uri: "http://127.0.0.1:40001/callback" });
    const c = await consent(String(r.json.authorization_url), { browser: g.browser(), redirectUri: "http://127.0.0.1:40001/callback" });
    expect(c.redirectedTo?.origin).toBe("http://127.0.0.1:40001");
    expect(c.code).toStartWith("ath_code_");
    expect(c.state).toBe(r.state);
    expect(c.sessionId).toBe(String(r.json.ath_session_id));
    expect((await exchange(g, agent, client, { code: c.code ?? "", ath_session_id: String(r.json.ath_session_id) })).status).toBe(200);
  });

  test("without a redirect URI the result page shows the code and the exact `ath token` command", async () => {
    const r = await authorize(g, agent, client, mailRead);
    const c = await consent(String(r.json.authorization_url), { browser: g.browser() });
    expect(c.page.status).toBe(200);
    expect(c.code).toStartWith("ath_code_");
    const command = /ath token --gateway (\S+) --code (\S+) --session (\S+)</.exec(c.page.body);
    expect(command?.slice(1)).toEqual([BASE, c.code ?? "", String(r.json.ath_session_id)]);
  });
});

describe("Phase B — GET /ath/callback, refused", () => {
  test("a callback without the browser-binding cookie is refused with a 400 STATE_MISMATCH page, no code and no exchange", async () => {
    const r = await authorize(g, agent, client, mailRead);
    const browser = g.browser();
    let page = await browser.navigate(String(r.json.authorization_url), { stopAt: atCallback });
    page = await browser.submit(page, formWithButton(page, "Approve"), { button: "Approve", stopAt: atCallback });
    expect(page.url).toStartWith(`${BASE}/ath/callback?`);
    const stranger = await g.browser().navigate(page.url);
    expect(stranger.status).toBe(400);
    expect(stranger.headers.get("content-type")).toContain("text/html");
    expect(stranger.body).toContain("STATE_MISMATCH");
    expect(stranger.body).not.toMatch(/ath_code_/);
    expect(p.grants("authorization_code")).toEqual([]);
    expect(await g.audited("callback.rejected")).toBe(1);
  });

  test("a callback with an unknown state is refused with a 400 page and issues no code", async () => {
    const page = await g.browser().navigate(`${BASE}/ath/callback?code=abc&state=${randomString()}`);
    expect(page.status).toBe(400);
    expect(page.headers.get("content-type")).toContain("text/html");
    expect(page.body).not.toMatch(/ath_code_/);
    expect(p.tokenRequests).toEqual([]);
  });

  test("replaying the provider's callback URL after the flow completed issues no second code, and the first still works", async () => {
    const r = await authorize(g, agent, client, mailRead);
    const done = await consent(String(r.json.authorization_url), { browser: g.browser() });
    expect(done.code).toMatch(/^ath_code_/);
    const callbackUrl = done.page.history.find((u) => new URL(u).pathname === "/ath/callback");
    expect(callbackUrl).toBeDefined();
    const replay = await done.browser.navigate(String(callbackUrl));
    expect(replay.status).toBe(400);
    expect(replay.body).not.toMatch(/ath_code_/);
    expect(p.grants("authorization_code")).toHaveLength(1);
    const token = await exchange(g, agent, client, { code: String(done.code), ath_session_id: String(r.json.ath_session_id) });
    expect(token.status).toBe(200);
  });
});

describe("Phase B — denial", () => {
  test("Deny on the consent page sends error=access_denied to the agent, and /ath/token then answers 403 USER_DENIED", async () => {
    const redirectUri = "http://127.0.0.1:40002/callback";
    const r = await authorize(g, agent, client, { ...mailRead, user_redirect_uri: redirectUri });
    const c = await consent(String(r.json.authorization_url), { browser: g.browser(), gateway: "Deny", redirectUri });
    expect(c.error).toBe("access_denied");
    expect(c.state).toBe(r.state);
    expect(c.sessionId).toBe(String(r.json.ath_session_id));
    expect(c.code).toBeUndefined();
    // the provider was never asked
    expect(p.authorizeRequests).toEqual([]);
    expect(p.tokenRequests).toEqual([]);
    const t = await exchange(g, agent, client, { code: `ath_code_${randomString()}`, ath_session_id: String(r.json.ath_session_id) });
    expectError(t, "USER_DENIED");
    expect(t.json).not.toHaveProperty("access_token");
  });

  test("access_denied from the provider marks the session denied: /ath/token answers 403 USER_DENIED", async () => {
    const redirectUri = "http://127.0.0.1:40003/callback";
    const r = await authorize(g, agent, client, { provider_id: "demo", scopes: ["notes:read"], user_redirect_uri: redirectUri });
    const c = await consent(String(r.json.authorization_url), { browser: g.browser(), upstream: { decision: "Deny" }, redirectUri });
    expect(c.error).toBe("access_denied");
    expect(c.code).toBeUndefined();
    expect(g.outbound.filter((u) => u.includes("/oauth/token"))).toEqual([]);
    const t = await exchange(g, agent, client, { code: `ath_code_${randomString()}`, ath_session_id: String(r.json.ath_session_id) });
    expectError(t, "USER_DENIED");
    expect(t.json).not.toHaveProperty("access_token");
  });
});
