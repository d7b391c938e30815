/**
 * GET/POST /ath/consent/{handle} in process (DESIGN §3 Phase B step 2): the page names the agent and what it asks
 * for, the first browser to answer owns the request (binding cookie + CSRF token), Approve sends the person to the
 * provider with the session's PKCE challenge, and a provider without a consent screen is told to ask.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { authorize, consent, registeredAgent, type ClientCredentials } from "../../../helpers/agent.ts";
import type { TestAgent } from "../../../helpers/attestations.ts";
import { formWithButton } from "../../../helpers/browser.ts";
import { BASE, scriptedGateway, type InProcess } from "../../../helpers/in-process.ts";
import type { ScriptedProvider } from "../../../helpers/scripted-provider.ts";

const PURPOSE = `<script>alert("x")</script> & "quotes"`;

let g: InProcess;
let p: ScriptedProvider;
let agent: TestAgent;
let client: ClientCredentials;
beforeEach(async () => {
  ({ g, p } = await scriptedGateway((p) => ({
    mail: p.config({ display_name: "Sample Mail" }),
    quick: p.config({ display_name: "Quick (no consent screen)", consent_screen: false }),
  })));
  ({ agent, client } = await registeredAgent(g, {
    providers: [
      { provider_id: "mail", scopes: ["mail:read"] },
      { provider_id: "quick", scopes: ["mail:read"] },
    ],
    body: { purpose: PURPOSE },
  }));
});
afterEach(() => g.close());

const atProvider = (u: URL) => u.origin === p.origin;

async function pending(provider_id = "mail") {
  const r = await authorize(g, agent, client, { provider_id, scopes: ["mail:read"] });
  expect(r.status).toBe(200);
  return { url: String(r.json.authorization_url), sessionId: String(r.json.ath_session_id), state: r.state };
}

describe("Phase B — the consent page", () => {
  test("the consent page names the agent (escaped), provider and scopes, sets an HttpOnly SameSite=Lax binding cookie", async () => {
    const { url, sessionId } = await pending();
    const page = await g.browser().navigate(url);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toContain("text/html");
    const cookie = page.headers.getSetCookie().join("\n");
    expect(cookie).toMatch(/HttpOnly/i);
    expect(cookie).toMatch(/SameSite=Lax/i);
    expect(page.body).toContain(agent.agentId);
    expect(page.body).toContain("Sample Mail");
    expect(page.body).toContain("mail:read");
    expect(page.body).not.toContain("<script>alert");
    expect(page.body).toContain("&lt;script&gt;");
    expect(page.body).toMatch(/<button[^>]*>\s*Approve\s*<\/button>/);
    expect(page.body).toMatch(/<button[^>]*>\s*Deny\s*<\/button>/);
    expect(page.body).not.toContain(sessionId);
  });

  test("Approve redirects (303) to the provider with code, client_id, callback, scope, a fresh state and the session's challenge", async () => {
    const { url, state } = await pending();
    const browser = g.browser();
    const page = await browser.navigate(url);
    const sent = await browser.submit(page, formWithButton(page, "Approve"), { button: "Approve", stopAt: atProvider });
    const up = new URL(sent.url);
    expect(sent.status).toBe(303);
    expect(`${up.origin}${up.pathname}`).toBe(`${p.origin}/authorize`);
    expect(up.searchParams.get("response_type")).toBe("code");
    expect(up.searchParams.get("client_id")).toBe(p.clientId);
    expect(up.searchParams.get("redirect_uri")).toBe(`${BASE}/ath/callback`);
    expect(up.searchParams.get("scope")).toBe("mail:read");
    expect(up.searchParams.get("code_challenge_method")).toBe("S256");
    expect(up.searchParams.get("code_challenge")).toBe(new URL(url).searchParams.get("code_challenge"));
    expect(up.searchParams.has("prompt")).toBe(false);
    const upstate = up.searchParams.get("state") ?? "";
    expect(upstate.length).toBeGreaterThanOrEqual(16);
    expect(upstate).not.toBe(state);
  });

  test("consent_screen: false goes straight to the provider (303) but still sets the binding cookie", async () => {
    const { url } = await pending("quick");
    const browser = g.browser();
    const first = await browser.navigate(url, { stopAt: atProvider });
    expect(first.status).toBe(303);
    expect(new URL(first.url).origin).toBe(p.origin);
    expect(browser.cookies.some((k) => k.httpOnly)).toBe(true);
    // the same browser carries on at the provider (the consent URL is bound to the first browser that opened it)
    const c = await consent(first.url, { browser });
    expect(c.code).toStartWith("ath_code_");
  });

  test("with consent_screen: false the provider is told to ask the person (prompt=consent): its remembered consent is for the gateway's one client, not for this agent", async () => {
    const { url } = await pending("quick");
    const r = await g.fetch(new Request(url, { redirect: "manual" }));
    expect(r.status).toBe(303);
    expect(new URL(String(r.headers.get("location"))).searchParams.get("prompt")).toBe("consent");
  });
});

describe("Phase B — who may answer the consent page", () => {
  test("a link previewer opening the consent link first does not lock the person out", async () => {
    const { url } = await pending();
    // chat unfurlers and mail scanners fetch links (GET and HEAD) without the person's cookies
    await g.fetch(new Request(url, { method: "HEAD", headers: { "user-agent": "Slackbot-LinkExpanding 1.0" } }));
    await g.fetch(new Request(url, { headers: { "user-agent": "Slackbot-LinkExpanding 1.0" } }));
    const person = g.browser();
    const page = await person.navigate(url);
    expect(page.status).toBe(200);
    const done = await person.submit(page, formWithButton(page, "Approve"), { button: "Approve" });
    expect(done.history.some((u) => u.startsWith(p.origin))).toBe(true);
  });

  test("once a browser has answered the consent page, another can neither open nor approve it", async () => {
    const { url } = await pending();
    const person = g.browser();
    const page = await person.navigate(url);
    const intruder = g.browser();
    const intruderPage = await intruder.navigate(url);
    expect(intruderPage.status).toBe(200); // nobody has answered yet
    // the person approves; the session stays pending while they are at the provider
    const answered = await person.submit(page, formWithButton(page, "Approve"), { button: "Approve", stopAt: atProvider });
    expect(answered.history.some((u) => u.startsWith(p.origin))).toBe(true);

    const opened = await intruder.navigate(url);
    expect(opened.status).toBe(400);
    expect(opened.body).toContain("STATE_MISMATCH");
    expect(opened.body).not.toContain("Approve");
    // the intruder's own form (its own cookie and CSRF token), submitted after the person answered
    const approved = await intruder.submit(intruderPage, formWithButton(intruderPage, "Approve"), { button: "Approve" });
    expect(approved.status).toBe(400);
    expect(approved.body).toContain("STATE_MISMATCH");
    expect(approved.history.some((u) => u.startsWith(p.origin))).toBe(false);
    // and the person's form replayed with the intruder's cookie jar fails its CSRF check
    const replayed = await intruder.submit(page, formWithButton(page, "Approve"), { button: "Approve" });
    expect(replayed.status).toBe(400);
    expect(replayed.body).toContain("STATE_MISMATCH");
    expect(await g.audited("consent.approved")).toBe(1);
  });

  test("Approve without the page's CSRF token is refused, and the person can still approve afterwards", async () => {
    const { url } = await pending();
    const person = g.browser();
    const page = await person.navigate(url);
    const form = formWithButton(page, "Approve");
    for (const csrf of ["", "0".repeat(64)]) {
      const forged = await person.submit(page, form, { button: "Approve", fields: { csrf } });
      expect(forged.status).toBe(400);
      expect(forged.body).toContain("STATE_MISMATCH");
      expect(forged.history.some((u) => u.startsWith(p.origin))).toBe(false);
    }
    expect(await g.audited("consent.approved")).toBe(0);
    const done = await consent(url, { browser: person });
    expect(done.code).toMatch(/^ath_code_/);
  });
});
