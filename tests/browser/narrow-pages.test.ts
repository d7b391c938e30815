/**
 * Two pages a newcomer read on a phone (issue 40), in Chromium at 390 px against the compiled `dist/ath serve --demo
 * --approval manual`: the consent page shows the whole did:key (its end is what tells one agent from another), and
 * the console's agent page fits the screen and shows what the agent may do — approved and pending scopes — and its
 * tokens. "Fits" is measured: no element reaches past the viewport, and no text is clipped inside a box that scrolls.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { authorize, call, consent, exchange, register, type ClientCredentials } from "../helpers/agent.ts";
import { makeAgent, type TestAgent } from "../helpers/attestations.ts";
import { closeContexts, freshPage, screenshots, sharedChromium, VIEWPORTS } from "../helpers/chromium.ts";
import { startGateway, type Gateway } from "../helpers/gateway.ts";
import { clickAndWait } from "../helpers/person.ts";

let gw: Gateway;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let agent: TestAgent;
let client: ClientCredentials;

const admin = (path: string, init: { method?: string; json?: unknown } = {}) => call(`${gw.baseUrl}${path}`, { ...init, headers: { "x-ath-user-token": gw.adminToken } });

beforeAll(async () => {
  [gw, browser] = await Promise.all([startGateway({ binary: true, providers: {}, extraArgs: ["--demo", "--approval", "manual"] }), sharedChromium()]);
  agent = await makeAgent();
  const r = await register(gw.baseUrl, agent, { providers: [{ provider_id: "demo", scopes: ["notes:read"] }], body: { purpose: "Read my notes", developer: { name: "Acme", id: "dev-acme" } } });
  client = { client_id: String(r.json.client_id), client_secret: String(r.json.client_secret) };
  expect((await admin(`/ath/admin/agents/${client.client_id}`, { method: "PATCH", json: { status: "approved" } })).status).toBe(200);
  ({ context, page } = await freshPage(browser));
  await page.setViewportSize(VIEWPORTS.phone);
}, 60_000);
afterAll(async () => {
  await context?.close();
  await closeContexts(browser);
  await gw?.cleanup();
});

/** Elements that reach past the viewport's right edge, or clip their own text (scrollWidth > clientWidth). */
async function overflowing(p: Page): Promise<string[]> {
  return p.evaluate(() => {
    const width = document.documentElement.clientWidth;
    const out: string[] = [];
    for (const el of Array.from(document.body.querySelectorAll("*"))) {
      const r = el.getBoundingClientRect();
      if (r.width === 0) continue;
      const name = `${el.tagName.toLowerCase()}${el.className ? `.${String(el.className).split(" ").join(".")}` : ""}`;
      if (r.right > width + 0.5) out.push(`${name} reaches ${Math.round(r.right)}px of ${width}`);
      else if (el.scrollWidth > el.clientWidth + 1 && getComputedStyle(el).overflowX !== "visible") out.push(`${name} clips ${el.scrollWidth - el.clientWidth}px`);
    }
    return out;
  });
}

describe("the consent page at 390 px", () => {
  test("shows the agent's whole did:key: nothing clipped, nothing past the screen", async () => {
    const a = await authorize(gw.baseUrl, agent, client, { provider_id: "demo", scopes: ["notes:read"] });
    await page.goto(String(a.json.authorization_url));
    const shown = page.locator("code.id").first();
    expect(await shown.textContent()).toBe(agent.agentId);
    expect(agent.agentId).toStartWith("did:key:");
    expect(await overflowing(page)).toEqual([]);
    // the last characters are on screen, inside the card
    const box = (await shown.boundingBox())!;
    expect(box.x + box.width).toBeLessThanOrEqual(VIEWPORTS.phone.width);
    await screenshots(page, "consent-did-key");
  });
});

describe("the console's agent page at 390 px", () => {
  test("fits the screen and shows approved and pending scopes and the agent's tokens", async () => {
    // a token for notes:read, and notes:write asked for later (waiting for the admin)
    const a = await authorize(gw.baseUrl, agent, client, { provider_id: "demo", scopes: ["notes:read"] });
    const c = await consent(String(a.json.authorization_url));
    expect((await exchange(gw.baseUrl, agent, client, { code: c.code!, ath_session_id: String(a.json.ath_session_id) })).status).toBe(200);
    const { attest } = await import("../helpers/attestations.ts");
    const grow = await call(`${gw.baseUrl}/ath/agents/registration`, {
      method: "PATCH",
      headers: { authorization: `Basic ${btoa(`${client.client_id}:${client.client_secret}`)}` },
      json: { agent_attestation: await attest(agent, gw.baseUrl), requested_providers: [{ provider_id: "demo", scopes: ["notes:write"] }] },
    });
    expect(grow.status).toBe(200);

    await page.goto(`${gw.baseUrl}/admin/signin`);
    await page.fill("#token", gw.adminToken);
    await clickAndWait(page, "Sign in");
    await page.goto(`${gw.baseUrl}/admin/agents/${encodeURIComponent(client.client_id)}`);
    const access = page.locator("section#access");
    expect(await access.locator("tr", { hasText: "demo" }).innerText()).toMatch(/notes:read[\s\S]*notes:write/);
    expect(await access.locator(".pending-scopes").innerText()).toContain("notes:write");
    const tokens = page.locator("section#tokens tbody tr");
    expect(await tokens.count()).toBe(1);
    expect(await tokens.first().innerText()).toContain("notes:read");
    expect(await overflowing(page)).toEqual([]);
    await screenshots(page, "admin-agent");
    // the additions are approved from the page itself
    await clickAndWait(page, "Approve additions");
    await page.goto(`${gw.baseUrl}/admin/agents/${encodeURIComponent(client.client_id)}`);
    expect(await page.locator("section#access .pending-scopes").count()).toBe(0);
  });
});
