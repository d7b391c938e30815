/**
 * The gateway in process: createGateway over an in-memory SQLite store, with the sandbox provider (`demo`) mounted, a
 * clock the test moves, and a network of its own. Every request — the agent's, the browser's, and the gateway's own
 * calls to providers — goes through one `fetch` that hands `BASE` to `app.fetch` and other origins to the hosts the
 * test gives (a scripted provider, an identity-document host): no port, no process, no sleeping for expiry.
 */
import { createGateway, type App } from "../../src/gateway/app.ts";
import type { Gateway, Logger } from "../../src/gateway/context.ts";
import type { AuditPin } from "../../src/gateway/domain/audit-guard.ts";
import type { RateLimits } from "../../src/gateway/ops/rate-limit.ts";
import type { ApprovalMode } from "../../src/gateway/rules/policy.ts";
import { PATHS, ProviderConfig, type ProviderConfigInput } from "../../src/protocol/index.ts";
import { openSqliteStore } from "../../src/store/index.ts";
import type { Store } from "../../src/store/types.ts";
import { attest, type TestAgent } from "./attestations.ts";
import { Browser, formWithButton } from "./browser.ts";
import { ScriptedProvider } from "./scripted-provider.ts";

export const BASE = "https://gateway.test";
export const ADMIN_TOKEN = "admin_in_process_token";
export const INTROSPECTION_TOKEN = "introspection_in_process_token";

/** A clock that only moves when told to. */
export class TestClock {
  constructor(public ms = Date.now()) {}
  readonly now = () => this.ms;
  advance(seconds: number): void {
    this.ms += seconds * 1000;
  }
}

/** A host on the harness's network: its origin's requests go to `fetch`. */
export type Host = (req: Request) => Response | Promise<Response>;

export interface InProcessOptions {
  /** `native`: the sandbox provider is the app (DESIGN §7). */
  mode?: "gateway" | "native";
  /** How long audit events wait for their batch (default: the gateway's own). */
  auditDelayMs?: number;
  tokenTtlSeconds?: number;
  sessionTtlSeconds?: number;
  approval?: ApprovalMode;
  strictScopes?: boolean;
  upstreamTimeoutMs?: number;
  upstreamConcurrency?: number;
  /** Providers besides the sandbox (`demo`), as in a providers file. */
  providers?: Record<string, ProviderConfigInput>;
  /** Other origins on the network (e.g. `http://provider.test`): the gateway and the test's browsers reach them. */
  hosts?: Record<string, Host>;
  /** The store (default: in-memory SQLite); the gateway closes it. */
  store?: Store;
  /** Mount the sandbox provider (default: yes, except in native mode with `providers`, where one of them is the app). */
  demo?: boolean;
  /** Where the gateway logs (default: nowhere). */
  log?: Logger;
  /** Rate limits (default: none) and body limits (default: the gateway's). */
  rateLimits?: RateLimits;
  maxBody?: number;
  maxProxyBody?: number;
  trustProxy?: boolean;
  metricsToken?: string;
  metricsPublic?: boolean;
  /** The sealing key; instances sharing one store share it (the audit key is sealed under it). Default: random. */
  masterKey?: Uint8Array<ArrayBuffer>;
  /** Refresh families (DESIGN §17): life from the consent and idle limit, seconds; DPoP required everywhere. */
  refreshTtlSeconds?: number;
  refreshIdleSeconds?: number;
  requireDpop?: boolean;
  /** Where the audit chain's verified head is kept (default: memory, per gateway); shared to stand for a restart. */
  auditPin?: AuditPin;
}

export interface InProcess {
  app: App;
  gw: Gateway;
  clock: TestClock;
  baseUrl: string;
  /** Every request the gateway itself sent (to providers, identity documents, its own sandbox), as `METHOD url`. */
  outbound: string[];
  /** Sends a request to the gateway: a path (relative to BASE) or a Request. */
  fetch(input: string | Request, init?: RequestInit): Promise<Response>;
  /** A browser whose network is this one. */
  browser(): Browser;
  /** How many audit events of `type` the gateway recorded (what happened, and what did not). */
  audited(type: string): Promise<number>;
  close(): Promise<void>;
}

export async function inProcessGateway(o: InProcessOptions = {}): Promise<InProcess> {
  const clock = new TestClock();
  const hosts = new Map(Object.entries(o.hosts ?? {}).map(([origin, host]) => [new URL(origin).origin, host]));
  const outbound: string[] = [];
  let app: App | undefined;
  const route = async (req: Request): Promise<Response> => {
    if (req.url.startsWith(`${BASE}/`)) return app!.fetch(req);
    const host = hosts.get(new URL(req.url).origin);
    if (!host) throw new TypeError(`in-process network: nothing at ${new URL(req.url).origin}`);
    // a host that ignores the abort still loses the race, as a real connection would be cut
    if (!req.signal) return host(req);
    return new Promise<Response>((resolve, reject) => {
      req.signal.addEventListener("abort", () => reject(req.signal.reason), { once: true });
      Promise.resolve(host(req)).then(resolve, reject);
    });
  };
  const providers = Object.fromEntries(Object.entries(o.providers ?? {}).map(([id, config]) => [id, ProviderConfig.parse(config)]));
  app = await createGateway(
    {
      baseUrl: BASE,
      mode: o.mode ?? "gateway",
      version: "0.0.0-test",
      dev: true,
      approval: o.approval ?? "auto",
      sessionTtlSeconds: o.sessionTtlSeconds ?? 600,
      tokenTtlSeconds: o.tokenTtlSeconds ?? 3600,
      strictScopes: o.strictScopes ?? false,
      upstreamTimeoutMs: o.upstreamTimeoutMs ?? 5_000,
      upstreamConcurrency: o.upstreamConcurrency ?? 256,
      providers,
      adminToken: ADMIN_TOKEN,
      introspectionToken: INTROSPECTION_TOKEN,
      masterKey: o.masterKey ?? crypto.getRandomValues(new Uint8Array(32)),
      demo: o.demo ?? !(o.mode === "native" && Object.keys(providers).length > 0),
      ...(o.auditDelayMs === undefined ? {} : { auditBatch: { delayMs: o.auditDelayMs } }),
      ...(o.rateLimits ? { rateLimits: o.rateLimits } : {}),
      ...(o.maxBody ? { maxBody: o.maxBody } : {}),
      ...(o.maxProxyBody ? { maxProxyBody: o.maxProxyBody } : {}),
      ...(o.trustProxy ? { trustProxy: true } : {}),
      ...(o.metricsToken ? { metricsToken: o.metricsToken } : {}),
      ...(o.metricsPublic ? { metricsPublic: true } : {}),
      ...(o.refreshTtlSeconds ? { refreshTtlSeconds: o.refreshTtlSeconds } : {}),
      ...(o.refreshIdleSeconds ? { refreshIdleSeconds: o.refreshIdleSeconds } : {}),
      ...(o.requireDpop ? { requireDpop: true } : {}),
      ...(o.auditPin ? { auditPin: o.auditPin } : {}),
    },
    {
      store: o.store ?? openSqliteStore(":memory:"),
      fetch: (input, init) => {
        const req = new Request(input, init);
        outbound.push(`${req.method} ${req.url}`);
        return route(req);
      },
      clock: clock.now,
      ...(o.log ? { log: o.log } : {}),
    },
  );
  const running = app;
  return {
    app: running,
    gw: running.gateway,
    clock,
    baseUrl: BASE,
    outbound,
    fetch: (input, init) => route(typeof input === "string" ? new Request(BASE + input, init) : input),
    browser: () => new Browser(route),
    audited: async (type) => {
      await running.gateway.auditLog.flush();
      return (await running.gateway.store.listAudit({ type })).length;
    },
    close: () => running.close(),
  };
}

/** A gateway whose extra providers live on one scripted provider (`p`): `providers(p)` gives their entries. */
export async function scriptedGateway(
  providers: (p: ScriptedProvider) => Record<string, ProviderConfigInput>,
  o: InProcessOptions = {},
): Promise<{ g: InProcess; p: ScriptedProvider }> {
  const p = new ScriptedProvider();
  const g = await inProcessGateway({ ...o, providers: { ...providers(p), ...o.providers }, hosts: { [p.origin]: p.fetch, ...o.hosts } });
  return { g, p };
}

// The agent's and the person's steps, in process --------------------------------------------------

/** A Response as expectError reads it (status, headers, body text). */
export async function asError(res: Response) {
  return { status: res.status, headers: res.headers, text: await res.text() };
}

export async function postJson(g: InProcess, path: string, body: unknown, headers: Record<string, string> = {}) {
  const res = await g.fetch(path, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: JSON.stringify(body) });
  const text = await res.text();
  let json: Record<string, any> = {};
  try {
    json = JSON.parse(text) as Record<string, any>;
  } catch {
    // not JSON: tests look at text
  }
  return { res, status: res.status, headers: res.headers, text, json };
}

export interface Client {
  client_id: string;
  client_secret: string;
}

/** Registers `agent` for the sandbox's scopes (201 expected). `provider_id: null` leaves it out (native mode). */
export async function registered(g: InProcess, agent: TestAgent, o: { provider_id?: string | null; scopes?: string[] } = {}): Promise<Client> {
  const entry: Record<string, unknown> = { scopes: o.scopes ?? ["notes:read", "notes:write"] };
  if (o.provider_id !== null) entry.provider_id = o.provider_id ?? "demo";
  const r = await postJson(g, PATHS.register, {
    agent_id: agent.agentId,
    agent_attestation: await attest(agent, BASE),
    developer: { name: "In-process tests", id: "dev-in-process" },
    requested_providers: [entry],
  });
  if (r.status !== 201) throw new Error(`register: ${r.status} ${r.text}`);
  return { client_id: String(r.json.client_id), client_secret: String(r.json.client_secret) };
}

/** Opens a consent session for notes:read (200 expected); `provider_id: null` leaves it out (native mode). */
export async function authorized(g: InProcess, agent: TestAgent, client: Client, o: { provider_id?: string | null } = {}) {
  const body: Record<string, unknown> = {
    client_id: client.client_id,
    agent_attestation: await attest(agent, BASE),
    scopes: ["notes:read"],
    state: "in-process-state-0123456789",
  };
  if (o.provider_id !== null) body.provider_id = o.provider_id ?? "demo";
  const r = await postJson(g, PATHS.authorize, body);
  if (r.status !== 200) throw new Error(`authorize: ${r.status} ${r.text}`);
  return { url: String(r.json.authorization_url), sessionId: String(r.json.ath_session_id) };
}

/** The person: Approve on the gateway's consent page, Allow at the sandbox's sign-in; the code of the result page. */
export async function consented(browser: Browser, url: string): Promise<string> {
  let page = await browser.navigate(url);
  page = await browser.submit(page, formWithButton(page, "Approve"), { button: "Approve" });
  page = await browser.submit(page, formWithButton(page, "Allow"), { button: "Allow" });
  const code = /ath_code_[A-Za-z0-9_-]+/.exec(page.body)?.[0];
  if (!code) throw new Error(`no code on ${page.url} (${page.status}): ${page.body.slice(0, 400)}`);
  return code;
}

/** register → authorize → consent → token; the client and the token response. */
export async function tokenFor(g: InProcess, agent: TestAgent, o: { provider_id?: string | null } = {}) {
  const client = await registered(g, agent, o);
  const session = await authorized(g, agent, client, o);
  const code = await consented(g.browser(), session.url);
  const r = await postJson(g, PATHS.token, {
    grant_type: "authorization_code",
    ...client,
    agent_attestation: await attest(agent, `${BASE}${PATHS.token}`),
    code,
    ath_session_id: session.sessionId,
  });
  if (r.status !== 200) throw new Error(`token: ${r.status} ${r.text}`);
  return { client, accessToken: String(r.json.access_token), json: r.json };
}
