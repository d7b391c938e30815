/**
 * The consent page and its siblings (result, denied, error pages) as Chromium renders them from the compiled
 * `dist/ath serve --demo`: what a person is shown, that agent-supplied text stays text, that no other site can frame
 * the Approve button, and that every HTML response carries the security headers.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Browser, Response } from "playwright-core";
import { authorize, register, type ClientCredentials } from "../helpers/agent.ts";
import { makeAgent, type TestAgent } from "../helpers/attestations.ts";
import { startWorld, type World } from "../helpers/world.ts";
import { closeContexts, freshPage, recordDialogs, screenshots, sharedChromium } from "../helpers/chromium.ts";
import { clickAndWait, consentInChromium, openConsent } from "../helpers/person.ts";

const HOSTILE = `<script>alert(1)</script> "><img src=x onerror=alert(1)> & 'quotes'`;
const DEVELOPER = { name: "Acme Robotics", id: "dev-acme-42" };

interface Target {
  provider: string;
  displayName: string;
  scopes: { name: string; description: string }[];
}

const TARGETS: Target[] = [
  {
    provider: "described",
    displayName: "Sample Mail (described)",
    scopes: [
      { name: "mail:read", description: "Read your messages" },
      { name: "mail:send", description: "Send messages as you" },
    ],
  },
  {
    provider: "demo",
    displayName: "Demo Notes (sandbox)",
    scopes: [
      { name: "notes:read", description: "Read your demo notes" },
      { name: "notes:write", description: "Create and delete your demo notes" },
    ],
  },
];

let w: World;
let browser: Browser;
let agent: TestAgent;
let client: ClientCredentials;
let hostile: { agent: TestAgent; client: ClientCredentials };

async function registered(purpose: string, developer: { name: string; id: string }) {
  const a = await makeAgent();
  const r = await register(w.baseUrl, a, {
    providers: TARGETS.map((t) => ({ provider_id: t.provider, scopes: t.scopes.map((s) => s.name) })),
    body: { purpose, developer },
  });
  if (r.status !== 201) throw new Error(r.text);
  return { agent: a, client: { client_id: String(r.json.client_id), client_secret: String(r.json.client_secret) } };
}

async function consentUrl(a: TestAgent, c: ClientCredentials, t: Target): Promise<string> {
  const r = await authorize(w.baseUrl, a, c, { provider_id: t.provider, scopes: t.scopes.map((s) => s.name) });
  if (r.status !== 200) throw new Error(r.text);
  return String(r.json.authorization_url);
}

beforeAll(async () => {
  [w, browser] = await Promise.all([
    startWorld({
      binary: true,
      extraArgs: ["--demo"],
      providers: (auth) => ({
        described: {
          display_name: "Sample Mail (described)",
          available_scopes: ["openid", "mail:read", "mail:send"],
          authorize_endpoint: auth.authorizeEndpoint,
          token_endpoint: auth.tokenEndpoint,
          client_id: auth.postClient.client_id,
          client_secret: auth.postClient.client_secret,
          scope_descriptions: { "mail:read": "Read your messages", "mail:send": "Send messages as you" },
        },
      }),
    }),
    sharedChromium(),
  ]);
  ({ agent, client } = await registered("Summarise the inbox every morning", DEVELOPER));
  hostile = await registered(HOSTILE, { name: HOSTILE, id: "dev-<b>x</b>" });
});
afterAll(async () => {
  await closeContexts(browser);
  await w?.stop();
});

describe("what the consent page shows", () => {
  for (const t of TARGETS) {
    test(`for ${t.provider}: the provider, each scope with its description, the agent's proven id, its developer and purpose marked as claimed, and the expiry`, async () => {
      const { context, page } = await freshPage(browser);
      try {
        await openConsent(page, await consentUrl(agent, client, t));
        expect(await page.getByRole("heading", { level: 1 }).textContent()).toBe(`An agent wants access to your ${t.displayName} account`);
        const scopes = page.locator("ul.scopes li");
        expect(await scopes.count()).toBe(t.scopes.length);
        for (const [i, s] of t.scopes.entries()) {
          expect(await scopes.nth(i).locator(".scope-name").textContent()).toBe(s.name);
          expect(await scopes.nth(i).locator(".scope-desc").textContent()).toBe(s.description);
        }
        const claim = page.locator(".claim");
        expect(await claim.locator(".claim-label").textContent()).toContain("Claimed by the agent");
        const facts = Object.fromEntries(
          await claim.locator("dt").evaluateAll((dts) => dts.map((dt) => [dt.textContent, dt.nextElementSibling?.textContent])),
        );
        expect(await page.locator("dl.identity dd").textContent()).toBe(agent.agentId);
        expect(facts).toEqual({
          Developer: `${DEVELOPER.name} (${DEVELOPER.id})`,
          Purpose: "Summarise the inbox every morning",
        });
        expect(await page.locator(".expiry").textContent()).toMatch(/^This request expires in (9|10) minutes \(\d{4}-\d\d-\d\d \d\d:\d\d UTC\)\.$/);
        for (const label of ["Approve", "Deny"]) expect(await page.getByRole("button", { name: label, exact: true }).isVisible()).toBe(true);
      } finally {
        await context.close();
      }
    });
  }

  test("a purpose and developer carrying <script> and an onerror attribute render as inert, visible text", async () => {
    const { context, page } = await freshPage(browser);
    const dialogs = recordDialogs(page);
    try {
      const target = TARGETS[0] as Target;
      await openConsent(page, await consentUrl(hostile.agent, hostile.client, target));
      await screenshots(page, "consent-hostile-purpose");
      const dds = await page.locator(".claim dd").allTextContents();
      expect(dds).toContain(HOSTILE);
      expect(dds).toContain(`${HOSTILE} (dev-<b>x</b>)`);
      expect(await page.locator("script, img, b").count()).toBe(0);
      // pressing Approve loads the provider's page; any script that had slipped through would have fired by now
      await clickAndWait(page, "Approve");
      expect(dialogs).toEqual([]);
    } finally {
      await context.close();
    }
  });
});

describe("no clickjacking of the Approve button", () => {
  test("the consent page sends frame-ancestors 'none' and X-Frame-Options DENY, and a page of another loopback origin cannot frame it", async () => {
    const url = await consentUrl(agent, client, TARGETS[0] as Target);
    // another origin (its own port) frames a page of its own, which renders, and the consent page, which must not
    const framer = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch(req) {
        const html = new URL(req.url).pathname === "/own"
          ? "<!doctype html><button>Own button</button>"
          : `<!doctype html><iframe id="own" src="/own"></iframe><iframe id="victim" src="${url}"></iframe>`;
        return new Response(html, { headers: { "content-type": "text/html" } });
      },
    });
    const { context, page } = await freshPage(browser);
    try {
      const consentResponse = page.waitForResponse((r) => r.url() === url);
      await page.goto(`http://127.0.0.1:${framer.port}/`);
      const headers = await (await consentResponse).allHeaders();
      expect(headers["content-security-policy"]).toContain("frame-ancestors 'none'");
      expect(headers["x-frame-options"]).toBe("DENY");
      expect(await page.frameLocator("#own").getByRole("button", { name: "Own button" }).count()).toBe(1);
      const victim = await (await page.$("#victim"))?.contentFrame();
      expect(victim?.url()).not.toStartWith(w.baseUrl);
      expect(await page.frameLocator("#victim").getByRole("button").count()).toBe(0);
    } finally {
      await context.close();
      void framer.stop(true);
    }
  });
});

describe("security headers", () => {
  test("every HTML response — consent, sandbox sign-in, result, denied and error pages — has a strict CSP, Referrer-Policy no-referrer and Cache-Control no-store", async () => {
    const { context, page } = await freshPage(browser);
    const html: Response[] = [];
    context.on("response", (r) => {
      if (r.url().startsWith(w.baseUrl) && (r.headers()["content-type"] ?? "").startsWith("text/html")) html.push(r);
    });
    try {
      const demo = TARGETS[1] as Target;
      await consentInChromium(page, await consentUrl(agent, client, demo));
      await consentInChromium(page, await consentUrl(agent, client, demo), { gateway: "deny" });
      await page.goto(`${w.baseUrl}/ath/consent/not-a-handle`);
      await screenshots(page, "error-unknown-link");
      await page.goto(`${w.baseUrl}/ath/callback?code=x`);

      const seen = html.map((r) => `${r.status()} ${new URL(r.url()).pathname.replace(/\/ath\/consent\/.+/, "/ath/consent/…")}`);
      expect(seen).toEqual([
        "200 /ath/consent/…", // consent page
        "200 /demo/oauth/authorize", // the sandbox's sign-in page
        "200 /ath/callback", // result page with the code
        "200 /ath/consent/…",
        "200 /ath/consent/…", // denied page (answer to the Deny POST)
        "400 /ath/consent/…", // unknown link
        "400 /ath/callback", // callback without state
      ]);
      for (const r of html) {
        const h = await r.allHeaders();
        const where = `${r.request().method()} ${r.url()}`;
        expect({ where, csp: h["content-security-policy"] }).toEqual({ where, csp: expect.stringMatching(/^default-src 'none'; style-src 'sha256-[A-Za-z0-9+/=]+'; .*frame-ancestors 'none'/) });
        expect({ where, referrer: h["referrer-policy"], cache: h["cache-control"], frame: h["x-frame-options"] }).toEqual({
          where,
          referrer: "no-referrer",
          cache: "no-store",
          frame: "DENY",
        });
      }
    } finally {
      await context.close();
    }
  });
});
