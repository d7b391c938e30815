/**
 * `dist/ath mcp` driven by the official SDK client, with the person in Chromium: a host without elicitation shows
 * the URL (the test opens it) and calls ath_token; a host with URL-mode elicitation gets an `elicitation/create`
 * whose handler opens the URL in Chromium, and ath_authorize itself answers `authorized`. Either way the provider's
 * redirect reaches the server's loopback receiver. Against oidc-provider (`mail`) and the --demo sandbox (`demo`).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Browser } from "playwright-core";
import type { ElicitRequest, ElicitResult } from "@modelcontextprotocol/sdk/types.js";
import { closeContexts, freshPage, screenshots, sharedChromium } from "../helpers/chromium.ts";
import { athError, startHost, textOf, type Host } from "../helpers/mcp-host.ts";
import { tempDir } from "../helpers/net.ts";
import { consentInChromium, type ConsentSteps } from "../helpers/person.ts";
import { startWorld, type World } from "../helpers/world.ts";

const TARGETS = [
  { upstream: "the real upstream (oidc-provider)", provider: "mail", scopes: ["openid", "mail:read"], api: "/v1/messages", answer: '"subject":"hello"' },
  { upstream: "the --demo sandbox", provider: "demo", scopes: ["notes:read"], api: "/notes", answer: "Welcome to Demo Notes" },
];

/** The parameters of a URL-mode `elicitation/create` (MCP 2025-11-25). */
type UrlElicitation = { mode: "url"; url: string; elicitationId: string; message: string };

let w: World;
let browser: Browser;
const cleanups: (() => Promise<void>)[] = [];

beforeAll(async () => {
  [w, browser] = await Promise.all([startWorld({ binary: true, extraArgs: ["--demo"] }), sharedChromium()]);
});
afterAll(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => undefined);
  await closeContexts(browser);
  await w?.stop();
});

async function host(elicit?: (params: ElicitRequest["params"]) => Promise<ElicitResult>): Promise<{ host: Host; home: string }> {
  const home = await tempDir("mcp-browser");
  const h = await startHost({ home: home.path, args: ["-g", w.baseUrl], ...(elicit === undefined ? {} : { elicit }) });
  cleanups.push(async () => {
    await h.close();
    await home.remove();
  });
  return { host: h, home: home.path };
}

/** The person in Chromium: opens `url`, answers the gateway's and the provider's pages; the last page's text. */
async function person(url: string, steps: ConsentSteps = {}, shot?: string): Promise<{ url: string; text: string }> {
  const { context, page } = await freshPage(browser);
  try {
    await consentInChromium(page, url, steps);
    if (shot !== undefined) await screenshots(page, shot);
    return { url: page.url(), text: String(await page.textContent("body")) };
  } finally {
    await context.close();
  }
}

for (const t of TARGETS) {
  describe(`ath mcp with the person in Chromium, against ${t.upstream}`, () => {
    test("a host without elicitation: ath_authorize answers pending with the URL, the person approves, ath_token answers authorized, ath_request works", async () => {
      const { host: h } = await host();
      const started = await h.call("ath_authorize", { provider: t.provider, scopes: t.scopes });
      expect(started.structuredContent).toMatchObject({ status: "pending", provider_id: t.provider, registered_now: true });
      const url = String(started.structuredContent?.authorization_url);
      expect(new URL(url).origin).toBe(w.baseUrl);
      const last = await person(url);
      expect(last.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/callback\?/);
      expect(last.text).toContain("Authorization complete");
      const done = await h.call("ath_token", { provider: t.provider, wait_seconds: 30 });
      expect(done.structuredContent).toMatchObject({ status: "authorized", provider_id: t.provider, effective_scopes: t.scopes });
      const r = await h.call("ath_request", { provider: t.provider, method: "GET", path: t.api });
      expect(r.structuredContent?.status).toBe(200);
      expect(textOf(r)).toContain(t.answer);
    });

    test("a host with URL elicitation: the handler follows the URL in Chromium and ath_authorize itself answers authorized; the host is told the elicitation completed", async () => {
      const asked: UrlElicitation[] = [];
      const visits: Promise<{ url: string; text: string }>[] = [];
      const { host: h } = await host(async (params) => {
        asked.push(params as UrlElicitation);
        // The person agrees to open the page; the consent itself happens out of band, after this answer.
        visits.push(person((params as UrlElicitation).url, {}, t.provider === "demo" ? "mcp-elicitation-done" : undefined));
        return { action: "accept" };
      });
      const r = await h.call("ath_authorize", { provider: t.provider, scopes: t.scopes, wait_seconds: 60 });
      expect(r.isError).toBeUndefined();
      expect(r.structuredContent).toMatchObject({ status: "authorized", provider_id: t.provider, effective_scopes: t.scopes, registered_now: true });
      expect(asked).toHaveLength(1);
      const { mode, elicitationId, url } = asked[0] as UrlElicitation;
      expect({ mode, origin: new URL(url).origin, consent: new URL(url).pathname.startsWith("/ath/consent/") }).toEqual({ mode: "url", origin: w.baseUrl, consent: true });
      expect(elicitationId).toStartWith("ath_sess_");
      expect(String(asked[0]?.message)).toContain(t.provider);
      expect((await visits[0])?.text).toContain("Authorization complete");
      for (let i = 0; i < 50 && h.completed.length === 0; i++) await Bun.sleep(20);
      expect(h.completed).toEqual([elicitationId]);
      const api = await h.call("ath_request", { provider: t.provider, method: "GET", path: t.api });
      expect(textOf(api)).toContain(t.answer);
    });
  });
}

describe("ath mcp elicitation: the person's refusals", () => {
  test("the person declines to open the page: ath_authorize is a CANCELLED tool error and no pending session is left", async () => {
    const { host: h } = await host(async () => ({ action: "decline" }));
    const r = await h.call("ath_authorize", { provider: "mail", scopes: ["openid"] });
    expect(athError(r)).toMatchObject({ code: "CANCELLED", message: expect.stringContaining("declined") });
    for (let i = 0; i < 50; i++) {
      const s = await h.call("ath_status");
      if (s.structuredContent?.registrations[0]?.pending.length === 0) break;
      await Bun.sleep(20);
    }
    expect((await h.call("ath_status")).structuredContent?.registrations[0].pending).toEqual([]);
    expect(athError(await h.call("ath_token", { provider: "mail", wait_seconds: 0 })).code).toBe("NO_PENDING_SESSION");
  });

  test("the person opens the page but denies at the gateway: ath_authorize answers USER_DENIED", async () => {
    let visit: Promise<{ url: string; text: string }> | undefined;
    const { host: h } = await host(async (params) => {
      visit = person((params as UrlElicitation).url, { gateway: "deny" });
      return { action: "accept" };
    });
    const r = await h.call("ath_authorize", { provider: "mail", scopes: ["openid"], wait_seconds: 60 });
    expect(athError(r)).toMatchObject({ code: "USER_DENIED" });
    expect((await visit)?.text).toContain("Authorization denied");
    expect(athError(await h.call("ath_request", { provider: "mail", method: "GET", path: "/v1/messages" })).code).toBe("NO_TOKEN");
  });
});
