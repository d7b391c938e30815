/**
 * Debian's Chromium driven by playwright-core for the real-browser tests: one browser per test process, shared by
 * every file (`bun test` runs all files in one process, one file after another), each test in a context of its own;
 * screenshots of the pages a person sees (desktop and phone) under test-artifacts/, a record of JavaScript dialogs,
 * and a way to stop a redirect hop before it reaches a server (CDP Fetch: Playwright's routes never see redirect
 * targets).
 */
import { mkdir } from "node:fs/promises";
import { join, resolve } from "node:path";
import { chromium, type Browser, type BrowserContext, type Page } from "playwright-core";
import { atProcessEnd } from "./preload.ts";

export const CHROMIUM_PATH = process.env.ATH_CHROMIUM ?? "/usr/bin/chromium";

/** Flags for a headless CI machine: no sandbox (root in a container), no GPU, no background traffic. */
export const LAUNCH_ARGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-first-run",
  "--disable-quic",
];

export const VIEWPORTS = {
  desktop: { width: 1280, height: 800 },
  phone: { width: 390, height: 844 },
} as const;

export const ARTIFACTS = resolve(import.meta.dir, "../../test-artifacts/browser");

let shared: Promise<Browser> | undefined;

/** A Chromium of the caller's own (the scripts under scripts/ that drive a browser); tests use `sharedChromium`. */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM_PATH, args: LAUNCH_ARGS });
}

/**
 * The test process's Chromium, launched on first use (≈ 0.5–1 s saved per file that would launch its own) and
 * relaunched if it went away. A file closes what it opened with `closeContexts`, never the browser; the browser is
 * closed after the last file (tests/helpers/preload.ts).
 */
export function sharedChromium(): Promise<Browser> {
  if (shared === undefined) {
    const launching = launchChromium();
    shared = launching;
    void launching.then(
      (b) => {
        b.on("disconnected", () => shared === launching && (shared = undefined));
        atProcessEnd(() => b.close());
      },
      () => shared === launching && (shared = undefined),
    );
  }
  return shared;
}

/** Closes every context of the shared browser (a file's `afterAll`): the next file starts from a clean browser. */
export async function closeContexts(browser: Browser | undefined): Promise<void> {
  for (const context of browser?.contexts() ?? []) await context.close();
}

/**
 * A fresh context (own cookies) at the desktop size, and its first page. A missing button or a navigation that
 * never comes fails after 15 s with Playwright's message (its library default is to wait forever).
 */
export async function freshPage(browser: Browser): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({ viewport: VIEWPORTS.desktop });
  context.setDefaultTimeout(15_000);
  return { context, page: await context.newPage() };
}

/** Saves `<name>-desktop.png` and `<name>-phone.png` (full page) of what `page` shows now. */
export async function screenshots(page: Page, name: string): Promise<void> {
  await mkdir(ARTIFACTS, { recursive: true });
  const before = page.viewportSize();
  for (const [label, size] of Object.entries(VIEWPORTS)) {
    await page.setViewportSize(size);
    await page.screenshot({ path: join(ARTIFACTS, `${name}-${label}.png`), fullPage: true });
  }
  if (before) await page.setViewportSize(before);
}

/** Every alert/confirm/prompt the page opens, dismissed and recorded (an injected script would show here). */
export function recordDialogs(page: Page): string[] {
  const seen: string[] = [];
  page.on("dialog", (dialog) => {
    seen.push(`${dialog.type()}: ${dialog.message()}`);
    void dialog.dismiss();
  });
  return seen;
}

/**
 * Requests of `page` whose URL matches `pattern` (CDP wildcard, e.g. `*\/ath/callback*`) are failed before they
 * leave the browser, redirect hops included; `first` resolves with the first such URL (where a server sent the
 * browser, never delivered); `stop()` lets such requests through again.
 */
export async function interceptRequests(page: Page, pattern: string): Promise<{ first: Promise<string>; stop: () => Promise<void> }> {
  const cdp = await page.context().newCDPSession(page);
  let resolve!: (url: string) => void;
  const first = new Promise<string>((r) => (resolve = r));
  cdp.on("Fetch.requestPaused", (event) => {
    resolve(event.request.url);
    void cdp.send("Fetch.failRequest", { requestId: event.requestId, errorReason: "BlockedByClient" });
  });
  await cdp.send("Fetch.enable", { patterns: [{ urlPattern: pattern, requestStage: "Request" }] });
  return {
    first,
    async stop() {
      await cdp.send("Fetch.disable");
      await cdp.detach();
    },
  };
}
