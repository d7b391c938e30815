/**
 * The CLI in process against the real gateway in process: `createGateway` over in-memory SQLite with the sandbox
 * provider (`demo`, tests/helpers/in-process.ts) is the CLI's fetch, so every command meets the gateway's own
 * routes, checks and answers — attestation audiences, sessions, codes, the proxy's scope rules — with no port, no
 * process and no fake. Per test: a fresh home and gateway; `ath(argv, tty)`; the steps most tests start from.
 * `scripted` adds providers served by a fresh scripted provider per test (`p`: an OAuth server and an API whose
 * answers the test sets), for what the sandbox cannot show (a second provider, an upstream's binary or error body).
 */
import { afterEach, beforeEach, expect } from "bun:test";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { loadAgent, type Agent, type AgentOptions } from "../../src/agent/flows/agent.ts";
import type { ProviderConfigInput } from "../../src/protocol/index.ts";
import { formWithButton, type Browser } from "./browser.ts";
import { BASE, INTROSPECTION_TOKEN, inProcessGateway, type InProcess, type InProcessOptions } from "./in-process.ts";
import { runAth, tempHome, type RunOptions, type RunResult } from "./cli-harness.ts";
import { ScriptedProvider } from "./scripted-provider.ts";

export { BASE as GATEWAY };

/** Providers `github` (repo, read:user) and `gitlab` (api) on one scripted provider, for `scripted`. */
export const githubAndGitlab = (p: ScriptedProvider): Record<string, ProviderConfigInput> => ({
  github: p.config({ display_name: "GitHub", available_scopes: ["repo", "read:user"] }),
  gitlab: p.config({ display_name: "GitLab", available_scopes: ["api"] }),
});

/** One request the CLI sent to the gateway, as it left the CLI. */
export interface Sent {
  method: string;
  /** Path and query. */
  path: string;
  headers: Headers;
  /** The body as text ("" for none). */
  text: string;
  /** The body parsed: JSON, else a form. */
  body: Record<string, unknown>;
}

export interface CliOnGatewayOptions extends InProcessOptions {
  /** Providers served by a fresh scripted provider per test (`fx.p`). */
  scripted?: (p: ScriptedProvider) => Record<string, ProviderConfigInput>;
  /** The provider `registered`/`authorized` use (default: the sandbox's `demo`). */
  provider?: string;
  /** The scopes they ask for (default: notes:read). */
  scopes?: string;
}

/**
 * The person at the gateway's consent page: Approve, then Allow at the sandbox's sign-in when it asks (a scripted
 * provider answers at once); the code the result page shows.
 */
export async function personConsents(browser: Browser, url: string): Promise<string> {
  const page = await consentPages(browser, url);
  const code = /ath_code_[A-Za-z0-9_-]+/.exec(page.body)?.[0];
  if (!code) throw new Error(`no code on ${page.url} (${page.status}): ${page.body.slice(0, 400)}`);
  return code;
}

/**
 * The person consents and their browser lands on the agent's loopback redirect URI — a real listener the CLI opened
 * (`authorize --wait`), reached over the machine's loopback. The URL it landed on and what the listener answered.
 */
export async function personConsentsToLoopback(browser: Browser, url: string, button: "Approve" | "Deny" = "Approve"): Promise<{ url: string; status: number; body: string }> {
  const page = await consentPages(browser, url, (u) => u.hostname === "127.0.0.1", button);
  const res = await fetch(page.url);
  return { url: page.url, status: res.status, body: await res.text() };
}

async function consentPages(browser: Browser, url: string, stopAt?: (u: URL) => boolean, button: "Approve" | "Deny" = "Approve") {
  let page = await browser.navigate(url);
  page = await browser.submit(page, formWithButton(page, button), { button, stopAt });
  if (/value="Allow"|>Allow</.test(page.body)) page = await browser.submit(page, formWithButton(page, "Allow"), { button: "Allow", stopAt });
  return page;
}

export function cliOnGateway(o: CliOnGatewayOptions = {}) {
  const { scripted, provider = "demo", scopes: defaultScopes = "notes:read", ...gatewayOptions } = o;
  let current: { home: { dir: string; cleanup: () => Promise<void> }; g: InProcess; p: ScriptedProvider; sent: Sent[] } | undefined;
  beforeEach(async () => {
    const p = new ScriptedProvider();
    const g = await inProcessGateway(
      scripted ? { ...gatewayOptions, providers: { ...scripted(p), ...gatewayOptions.providers }, hosts: { [p.origin]: p.fetch, ...gatewayOptions.hosts } } : gatewayOptions,
    );
    current = { home: await tempHome(), g, p, sent: [] };
  });
  afterEach(async () => {
    await current?.g.close();
    await current?.home.cleanup();
  });
  const live = () => {
    if (!current) throw new TypeError("cliOnGateway is used outside a test");
    return current;
  };
  /** The CLI's fetch: the gateway in process, each request recorded as it left the CLI. */
  const fetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const req = new Request(input, init);
    const url = new URL(req.url);
    const text = req.body === null ? "" : await req.clone().text();
    const body = req.headers.get("content-type")?.includes("json") ? JSON.parse(text || "{}") : Object.fromEntries(new URLSearchParams(text));
    live().sent.push({ method: req.method, path: url.pathname + url.search, headers: new Headers(req.headers), text, body });
    return live().g.fetch(req);
  };
  function ath(argv: string[], tty = false): Promise<RunResult> {
    return runAth(live().home.dir, argv, { fetch: fetch as never, tty });
  }
  /** `ath argv` with more run options (a clock, stdin, env); the gateway is the fetch unless `o.fetch` says otherwise. */
  function athWith(argv: string[], run: RunOptions): Promise<RunResult> {
    return runAth(live().home.dir, argv, { fetch: fetch as never, ...run });
  }
  async function credentials() {
    return JSON.parse(await readFile(join(live().home.dir, "credentials.json"), "utf8"));
  }
  async function registered(scopes = defaultScopes): Promise<void> {
    expect((await ath(["register", "-g", BASE, "--provider", provider, "--scopes", scopes])).code).toBe(0);
  }
  return {
    get home() {
      return live().home;
    },
    get g() {
      return live().g;
    },
    /** The scripted provider of this test (its API's requests, its routes). */
    get p() {
      return live().p;
    },
    /** Every request the CLI sent to the gateway, oldest first. */
    get sent() {
      return live().sent;
    },
    fetch: fetch as typeof globalThis.fetch,
    ath,
    athWith,
    /** The person consents at `url` (an authorization_url); the code. */
    consent: (url: string) => personConsents(live().g.browser(), url),
    /** The person consents at `url` and the browser lands on the agent's loopback redirect URI; that URL. */
    consentToLoopback: (url: string, button: "Approve" | "Deny" = "Approve") => personConsentsToLoopback(live().g.browser(), url, button),
    /** The Agent the flows act as on this home and gateway, built as a front end other than the CLI builds it. */
    agent: (a: AgentOptions = {}): Promise<Agent> => loadAgent({ env: { ATH_HOME: live().home.dir }, fetch: fetch as never, ...a }),
    /** `ath register` for the provider with `scopes`; the test fails unless it exits 0. */
    registered,
    /** Registered, authorized (`--no-wait`), the person consents in the gateway's pages, and the code exchanged. */
    async authorized(scopes = defaultScopes): Promise<string> {
      await registered(scopes);
      const a = await ath(["authorize", "-g", BASE, "--provider", provider, "--scopes", scopes, "--no-wait", "--format", "json"]);
      expect(a.code).toBe(0);
      const { authorization_url, ath_session_id } = JSON.parse(a.stdout) as { authorization_url: string; ath_session_id: string };
      const code = await personConsents(live().g.browser(), authorization_url);
      expect((await ath(["token", "-g", BASE, "--code", code])).code).toBe(0);
      return ath_session_id;
    },
    /** credentials.json, parsed. */
    credentials,
    /** Whether the gateway still takes `token` (RFC 7662 introspection). */
    async active(token: string): Promise<boolean> {
      const r = await live().g.fetch("/ath/introspect", { method: "POST", headers: { authorization: `Bearer ${INTROSPECTION_TOKEN}` }, body: new URLSearchParams({ token }) });
      if (r.status !== 200) throw new Error(`introspect: ${r.status} ${await r.text()}`);
      return ((await r.json()) as { active: boolean }).active;
    },
    /** The ath_session_ids of the pending sessions saved for the one registered agent, oldest first. */
    async pendingIds(): Promise<string[]> {
      return Object.keys((Object.values((await credentials()).gateways[BASE].agents)[0] as { pending: object }).pending);
    },
  };
}
