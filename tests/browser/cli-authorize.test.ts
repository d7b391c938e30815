/**
 * `dist/ath authorize --wait` completed by a person in Chromium: the compiled CLI (own temporary ATH_HOME) prints
 * the consent URL, Chromium opens it and clicks Approve and the provider's Approve/Allow, the provider's redirect
 * reaches the CLI's loopback receiver, and the CLI exchanges the code, prints the token summary and can proxy.
 * Against oidc-provider (`mail`) and the --demo sandbox (`demo`) behind one `dist/ath serve --demo`; and the same
 * flow in native mode (`-m native -s <url>`, DESIGN §7) against `dist/ath serve --mode native` fronting oidc-provider.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Browser } from "playwright-core";
import { tempDir } from "../helpers/net.ts";
import { NATIVE_APP, startNativeWorld, startWorld, type World } from "../helpers/world.ts";
import { closeContexts, freshPage, screenshots, sharedChromium } from "../helpers/chromium.ts";
import { consentInChromium, type ConsentSteps } from "../helpers/person.ts";
import { ATH_BIN, AUTHORIZATION_URL, ath, run, start } from "../helpers/processes.ts";

const TARGETS = [
  { upstream: "the real upstream (oidc-provider)", provider: "mail", scopes: ["openid", "mail:read"], api: "/v1/messages", answer: '"subject":"hello"' },
  { upstream: "the --demo sandbox", provider: "demo", scopes: ["notes:read"], api: "/notes", answer: "Welcome to Demo Notes" },
];

let w: World;
let browser: Browser;
const cleanups: (() => Promise<void>)[] = [];

beforeAll(async () => {
  [w, browser] = await Promise.all([startWorld({ binary: true, extraArgs: ["--demo"] }), sharedChromium()]);
});
afterAll(async () => {
  for (const c of cleanups) await c();
  await closeContexts(browser);
  await w?.stop();
});

/** A fresh agent home with the gateway configured and the agent registered for `provider`. */
async function agentHome(provider: string, scopes: string[]): Promise<{ env: Record<string, string> }> {
  const home = await tempDir("cli-home");
  cleanups.push(home.remove);
  const env = { ATH_HOME: home.path };
  await ath(["config", "set-gateway", "local", w.baseUrl], { env });
  await ath(["register", "--provider", provider, "--scopes", scopes.join(","), "--purpose", "browser test of authorize --wait"], { env });
  return { env };
}

/** Runs `authorize --wait --no-open --format json` and lets Chromium answer the URL it prints on stderr. */
async function authorizeInBrowser(provider: string, scopes: string[], env: Record<string, string>, steps: ConsentSteps = {}, shot?: string) {
  const cli = start([ATH_BIN, "authorize", "--provider", provider, "--scopes", scopes.join(","), "--wait", "--no-open", "--format", "json"], { env });
  const { context, page } = await freshPage(browser);
  try {
    const [, url] = await cli.waitFor("stderr", AUTHORIZATION_URL);
    await consentInChromium(page, String(url), steps);
    if (shot) await screenshots(page, shot);
    const last = { url: page.url(), text: String(await page.textContent("body")) };
    return { authorizationUrl: String(url), last, finished: await cli.done };
  } finally {
    await context.close();
  }
}

for (const t of TARGETS) {
  describe(`ath authorize --wait completed in Chromium against ${t.upstream}`, () => {
    test("Approve in the browser: the CLI receives the redirect on its loopback port, exits 0 with the token summary, and ath proxy works", async () => {
      const { env } = await agentHome(t.provider, t.scopes);
      const { authorizationUrl, last, finished: done } = await authorizeInBrowser(t.provider, t.scopes, env, {}, t.provider === "demo" ? "cli-loopback-done" : undefined);
      expect(new URL(authorizationUrl).origin).toBe(w.baseUrl);
      // the provider's redirect went to the CLI's own loopback receiver, which told the person they are done
      expect(last.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/callback\?/);
      expect(last.text).toContain("Authorization complete");
      expect({ exit: done.exitCode, stderr: done.stderr }).toEqual({ exit: 0, stderr: expect.not.stringContaining("error") });
      const summary = JSON.parse(done.stdout) as Record<string, unknown>;
      expect(summary).toMatchObject({ provider_id: t.provider, token_type: "DPoP", effective_scopes: t.scopes });
      expect(String(summary.access_token)).toStartWith("ath_tk_");
      // the summary masks the token unless --show-secrets
      expect(String(summary.access_token)).not.toMatch(/^ath_tk_[A-Za-z0-9_-]{40,}$/);
      expect(Date.parse(String(summary.expires_at))).toBeGreaterThan(Date.now());

      const proxied = await run([ATH_BIN, "proxy", t.provider, "GET", t.api], { env });
      expect({ exit: proxied.exitCode, stderr: proxied.stderr }).toEqual({ exit: 0, stderr: "" });
      expect(proxied.stdout).toContain(t.answer);
    });

    test("Deny in the browser: the CLI exits 4 with USER_DENIED as its JSON document and saves no token", async () => {
      const { env } = await agentHome(t.provider, t.scopes);
      const { last, finished } = await authorizeInBrowser(t.provider, t.scopes, env, { gateway: "deny" });
      expect(last.text).toContain("Authorization denied");
      expect(finished.exitCode).toBe(4);
      expect(JSON.parse(finished.stdout)).toMatchObject({ error: { code: "USER_DENIED" } });
      const proxied = await run([ATH_BIN, "proxy", t.provider, "GET", t.api], { env });
      expect(proxied.exitCode).toBe(3);
      expect(proxied.stderr).toContain("ath authorize");
    });
  });
}

describe("ath -m native authorize --wait completed in Chromium against a native-mode gateway", () => {
  const APP = NATIVE_APP;
  let native: World;
  beforeAll(async () => {
    native = await startNativeWorld({ scopeRules: { "mail:read": ["GET /v1/messages", "GET /v1/messages/**"] } });
  }, 120_000);
  afterAll(() => native?.stop());

  test("register, authorize --wait with Approve in the browser, then proxy: no provider named anywhere, the app's API answers", async () => {
    const home = await tempDir("cli-native-home");
    cleanups.push(home.remove);
    const env = { ATH_HOME: home.path };
    const mode = ["-m", "native", "-s", native.baseUrl];
    const registered = await run([ATH_BIN, "register", ...mode, "--scopes", "mail:read", "--format", "json"], { env });
    expect({ exit: registered.exitCode, stderr: registered.stderr }).toEqual({ exit: 0, stderr: "" });
    expect(JSON.parse(registered.stdout).approved_providers[0].provider_id).toBe(APP);

    const cli = start([ATH_BIN, "authorize", ...mode, "--scopes", "mail:read", "--wait", "--no-open", "--format", "json"], { env });
    const { context, page } = await freshPage(browser);
    try {
      const [, url] = await cli.waitFor("stderr", AUTHORIZATION_URL);
      expect(new URL(String(url)).origin).toBe(native.baseUrl);
      await consentInChromium(page, String(url), {});
      expect(page.url()).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/callback\?/);
      expect(String(await page.textContent("body"))).toContain("Authorization complete");
    } finally {
      await context.close();
    }
    const done = await cli.done;
    expect({ exit: done.exitCode, stderr: done.stderr }).toEqual({ exit: 0, stderr: expect.not.stringContaining("error") });
    expect(JSON.parse(done.stdout)).toMatchObject({ provider_id: APP, effective_scopes: ["mail:read"] });

    native.api.clear();
    const proxied = await run([ATH_BIN, "proxy", ...mode, "GET", "/v1/messages", "--format", "json"], { env });
    expect({ exit: proxied.exitCode, stderr: proxied.stderr }).toEqual({ exit: 0, stderr: "" });
    expect(JSON.parse(proxied.stdout).status).toBe(200);
    // the call went through the gateway's /api mount to the app's API, with the app's own token
    expect(native.api.accepted().map((r) => r.path)).toEqual(["/v1/messages"]);
  });
});
