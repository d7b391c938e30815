/**
 * Every HTML page ath shows — the gateway's landing, consent, code and error pages, and the CLI's loopback page after
 * `authorize --wait` — uses the one stylesheet (src/text/style.ts) and is readable in light and dark mode: each
 * piece of text measured in Chromium against the background it is drawn on meets WCAG 2 contrast (4.5:1 for text,
 * 3:1 for large text such as headings), and nothing scrolls sideways at 390 px (issue 13, item 14).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Browser, Page } from "playwright-core";
import { startLoopback } from "../../src/agent/loopback.ts";
import { registered, authorized, scriptedGateway, type InProcess } from "../helpers/in-process.ts";
import { makeAgent } from "../helpers/attestations.ts";
import { closeContexts, screenshots, sharedChromium, VIEWPORTS } from "../helpers/chromium.ts";

let browser: Browser;
let g: InProcess;
let server: ReturnType<typeof Bun.serve>;
let origin: string;
beforeAll(async () => {
  browser = await sharedChromium();
  ({ g } = await scriptedGateway(() => ({})));
  // the in-process gateway behind a real port, so Chromium can load its pages
  server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: (req) => g.fetch(new URL(req.url).pathname + new URL(req.url).search, { method: req.method, headers: req.headers }) });
  origin = `http://127.0.0.1:${server.port}`;
});
afterAll(async () => {
  await closeContexts(browser);
  await server?.stop(true);
  await g?.close();
});

/** The lowest contrast ratio of any visible text on the page, and where; with the large-text threshold for headings. */
async function worstContrast(page: Page): Promise<{ ratio: number; needed: number; text: string }[]> {
  return page.evaluate(() => {
    const parse = (c: string) => (c.match(/[\d.]+/g) ?? []).map(Number);
    const lum = ([r, g, b]: number[]) => {
      const f = (v: number) => ((v /= 255) <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4);
      return 0.2126 * f(r!) + 0.7152 * f(g!) + 0.0722 * f(b!);
    };
    const background = (el: Element | null): number[] => {
      for (; el; el = el.parentElement) {
        const c = parse(getComputedStyle(el).backgroundColor);
        if (c.length === 3 || (c.length === 4 && c[3]! > 0.5)) return c.slice(0, 3);
      }
      return [255, 255, 255];
    };
    const out: { ratio: number; needed: number; text: string }[] = [];
    for (const el of Array.from(document.querySelectorAll("body *"))) {
      const own = Array.from(el.childNodes).some((n) => n.nodeType === 3 && n.textContent!.trim() !== "");
      if (!own || (el as HTMLElement).offsetParent === null) continue;
      const style = getComputedStyle(el);
      const [a, b] = [lum(parse(style.color)), lum(background(el))];
      const ratio = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
      const size = parseFloat(style.fontSize);
      const large = size >= 24 || (size >= 18.66 && Number(style.fontWeight) >= 700) || /^H[12]$/.test(el.tagName);
      out.push({ ratio: Math.round(ratio * 100) / 100, needed: large ? 3 : 4.5, text: `${el.tagName} ${el.textContent!.trim().slice(0, 40)}` });
    }
    return out;
  });
}

async function check(url: string, name: string): Promise<void> {
  for (const colorScheme of ["light", "dark"] as const) {
    const context = await browser.newContext({ viewport: VIEWPORTS.phone, colorScheme });
    try {
      const page = await context.newPage();
      await page.goto(url);
      const failing = (await worstContrast(page)).filter((t) => t.ratio < t.needed);
      expect({ page: name, colorScheme, failing }).toEqual({ page: name, colorScheme, failing: [] });
      expect(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth)).toBe(true);
      if (colorScheme === "dark") await screenshots(page, `contrast-${name}-dark`);
    } finally {
      await context.close();
    }
  }
}

describe("contrast and width of every page, light and dark", () => {
  test("the landing page at /", async () => {
    await check(`${origin}/`, "landing");
  });

  test("the consent page", async () => {
    const agent = await makeAgent();
    const client = await registered(g, agent);
    const { url } = await authorized(g, agent, client);
    await check(`${origin}${new URL(url).pathname}`, "consent");
  });

  test("an error page (a link that is no longer valid)", async () => {
    await check(`${origin}/ath/consent/no-such-handle`, "error");
  });

  test("the CLI's loopback pages: done, and a refused answer", async () => {
    const receiver = startLoopback("s".repeat(43), { timeoutMs: 30_000 });
    try {
      await check(`${receiver.redirectUri}?code=x&state=${"t".repeat(43)}`, "loopback-refused");
      await check(`${receiver.redirectUri}?code=ath_code_x&state=${"s".repeat(43)}`, "loopback-done");
    } finally {
      receiver.stop();
    }
  });
});
