/**
 * The agent side of one ATH flow, step by step: register (Phase A), authorize, the person's consent in a cookie-jar
 * browser (gateway page, then the upstream's login form), and the token exchange — over real HTTP to a base URL, or
 * to an in-process gateway (tests/helpers/in-process.ts) given as the target. Every helper returns the raw status
 * and body so tests can assert failures exactly; `fullFlow` chains them and returns each intermediate value.
 */
import { attest, makeAgent, type TestAgent } from "./attestations.ts";
import { Browser, formWithButton, type Page } from "./browser.ts";
import { randomString } from "./net.ts";

/** A gateway's base URL (reached over the network), or an in-process gateway: its base URL and its fetch. */
export type Target = string | Net;

export interface Net {
  baseUrl: string;
  fetch(req: Request): Promise<Response>;
}

const NETWORK = (req: Request) => globalThis.fetch(req);

function resolveTarget(target: Target): Net {
  return typeof target === "string" ? { baseUrl: target, fetch: NETWORK } : target;
}

export interface HttpResult<T = Record<string, unknown>> {
  status: number;
  headers: Headers;
  json: T;
  text: string;
}

export interface ClientCredentials {
  client_id: string;
  client_secret: string;
}

/** Sends JSON (or a raw string body) and returns status, headers and the parsed body (or {} if not JSON). */
export async function call<T = Record<string, unknown>>(
  url: string,
  init: { method?: string; json?: unknown; form?: Record<string, string>; body?: string; headers?: Record<string, string>; fetch?: Net["fetch"] } = {},
): Promise<HttpResult<T>> {
  const headers: Record<string, string> = { ...init.headers };
  let body = init.body;
  if (init.json !== undefined) {
    body = JSON.stringify(init.json);
    headers["content-type"] ??= "application/json";
  } else if (init.form !== undefined) {
    body = new URLSearchParams(init.form).toString();
    headers["content-type"] ??= "application/x-www-form-urlencoded";
  }
  const request = new Request(url, { method: init.method ?? (body === undefined ? "GET" : "POST"), headers, body, redirect: "manual" });
  const response = await (init.fetch ?? NETWORK)(request);
  const text = await response.text();
  let json = {} as T;
  try {
    json = JSON.parse(text) as T;
  } catch {
    // not JSON: tests look at `text`
  }
  return { status: response.status, headers: response.headers, json, text };
}

export interface RegisterOptions {
  providers: { provider_id: string; scopes: string[] }[];
  redirect_uris?: string[];
  attestation?: string;
  body?: Record<string, unknown>;
}

export async function register(target: Target, agent: TestAgent, o: RegisterOptions) {
  const { baseUrl, fetch } = resolveTarget(target);
  const body = {
    agent_id: agent.agentId,
    agent_attestation: o.attestation ?? (await attest(agent, baseUrl)),
    developer: { name: "E2E Tests", id: "dev-e2e" },
    requested_providers: o.providers,
    purpose: "end-to-end tests of the gateway",
    ...(o.redirect_uris === undefined ? {} : { redirect_uris: o.redirect_uris }),
    ...o.body,
  };
  return { body, ...(await call<Record<string, unknown> & Partial<ClientCredentials>>(`${baseUrl}/ath/agents/register`, { json: body, fetch })) };
}

/** A new agent (or `o.agent`) registered for `o.providers`, with its credentials; throws unless the answer is 201. */
export async function registeredAgent(target: Target, o: RegisterOptions & { agent?: TestAgent }) {
  const agent = o.agent ?? (await makeAgent());
  const registration = await register(target, agent, o);
  expectStatus("register", registration, 201);
  const client: ClientCredentials = { client_id: String(registration.json.client_id), client_secret: String(registration.json.client_secret) };
  return { agent, client, registration };
}

export interface AuthorizeOptions {
  provider_id: string;
  scopes: string[];
  state?: string;
  user_redirect_uri?: string;
  attestation?: string;
  body?: Record<string, unknown>;
}

export async function authorize(target: Target, agent: TestAgent, client: { client_id: string }, o: AuthorizeOptions) {
  const { baseUrl, fetch } = resolveTarget(target);
  const state = o.state ?? randomString(24);
  const body = {
    client_id: client.client_id,
    agent_attestation: o.attestation ?? (await attest(agent, baseUrl)),
    provider_id: o.provider_id,
    scopes: o.scopes,
    state,
    ...(o.user_redirect_uri === undefined ? {} : { user_redirect_uri: o.user_redirect_uri }),
    ...o.body,
  };
  const result = await call<{ authorization_url?: string; ath_session_id?: string } & Record<string, unknown>>(`${baseUrl}/ath/authorize`, { json: body, fetch });
  return { state, body, ...result };
}

export interface ConsentOptions {
  /** Button pressed on the gateway's consent page. */
  gateway?: "Approve" | "Deny";
  /** What the person does at the upstream login form: press Approve/Deny, grant only some scopes, log in as. */
  upstream?: { decision?: "Approve" | "Deny"; scopes?: string[]; login?: string };
  /** The agent's redirect URI: the browser stops before loading it. */
  redirectUri?: string;
  browser?: Browser;
}

export interface ConsentResult {
  browser: Browser;
  /** The last page loaded (the result page, an error page, or the redirect to the agent). */
  page: Page;
  /** The URL the browser was sent to at the agent, when a redirect URI was used. */
  redirectedTo?: URL;
  code?: string;
  sessionId?: string;
  state?: string;
  error?: string;
}

/** The person's part: open authorization_url, decide on the gateway page and at the upstream login form. */
export async function consent(authorizationUrl: string, o: ConsentOptions = {}): Promise<ConsentResult> {
  const browser = o.browser ?? new Browser();
  const redirectUri = o.redirectUri;
  const stopAt = redirectUri === undefined ? undefined : (u: URL) => u.href.startsWith(redirectUri);
  let page = await browser.navigate(authorizationUrl, { stopAt });
  for (let step = 0; step < 4 && page.status === 200; step++) {
    const path = new URL(page.url).pathname;
    if (path.startsWith("/ath/consent/")) {
      page = await browser.submit(page, formWithButton(page, "Approve"), { button: o.gateway ?? "Approve", stopAt });
    } else if (path.endsWith("/demo/oauth/authorize")) {
      // the sandbox provider's sign-in page (ath serve --demo)
      page = await browser.submit(page, formWithButton(page, "Allow"), { button: o.upstream?.decision === "Deny" ? "Cancel" : "Allow", stopAt });
    } else if (path.startsWith("/interaction/")) {
      const fields: Record<string, string> = {};
      if (o.upstream?.scopes !== undefined) fields.scopes = o.upstream.scopes.join(" ");
      if (o.upstream?.login !== undefined) fields.login = o.upstream.login;
      page = await browser.submit(page, formWithButton(page, "Approve"), { button: o.upstream?.decision ?? "Approve", fields, stopAt });
    } else if (path.startsWith("/__mock/consent/")) {
      // A provider mock's page (tests/helpers/providers/base.ts): Authorize or Cancel.
      const button = o.upstream?.decision === "Deny" ? "Cancel" : "Authorize";
      page = await browser.submit(page, formWithButton(page, "Authorize"), { button, stopAt });
    } else break;
  }
  if (stopAt !== undefined && stopAt(new URL(page.url))) {
    const u = new URL(page.url);
    const got = (k: string) => u.searchParams.get(k) ?? undefined;
    return { browser, page, redirectedTo: u, code: got("code"), sessionId: got("ath_session_id"), state: got("state"), error: got("error") };
  }
  return {
    browser,
    page,
    code: /ath_code_[A-Za-z0-9_-]+/.exec(page.body)?.[0],
    sessionId: /ath_sess_[A-Za-z0-9_-]+/.exec(page.body)?.[0],
  };
}

export interface ExchangeOptions {
  code: string;
  ath_session_id: string;
  attestation?: string;
  /** Send JSON instead of the RFC 6749 form encoding. */
  json?: boolean;
  body?: Record<string, string>;
}

export async function exchange(target: Target, agent: TestAgent, client: ClientCredentials, o: ExchangeOptions) {
  const { baseUrl, fetch } = resolveTarget(target);
  const body: Record<string, string> = {
    grant_type: "authorization_code",
    client_id: client.client_id,
    client_secret: client.client_secret,
    agent_attestation: o.attestation ?? (await attest(agent, `${baseUrl}/ath/token`)),
    code: o.code,
    ath_session_id: o.ath_session_id,
    ...o.body,
  };
  const url = `${baseUrl}/ath/token`;
  return o.json ? call(url, { json: body, fetch }) : call(url, { form: body, fetch });
}

export interface FlowOptions {
  provider_id: string;
  /** Scopes registered (default: `scopes`). */
  registerScopes?: string[];
  scopes: string[];
  agent?: TestAgent;
  client?: ClientCredentials;
  redirectUri?: string;
  consent?: Omit<ConsentOptions, "redirectUri">;
}

/** register → authorize → consent → token, throwing with the body if a step that should succeed does not. */
export async function fullFlow(target: Target, o: FlowOptions) {
  const net = resolveTarget(target);
  const agent = o.agent ?? (await makeAgent());
  let client = o.client;
  let registration: Awaited<ReturnType<typeof register>> | undefined;
  if (client === undefined) {
    ({ client, registration } = await registeredAgent(net, {
      agent,
      providers: [{ provider_id: o.provider_id, scopes: o.registerScopes ?? o.scopes }],
      ...(o.redirectUri === undefined ? {} : { redirect_uris: [o.redirectUri] }),
    }));
  }
  const authorization = await authorize(net, agent, client, {
    provider_id: o.provider_id,
    scopes: o.scopes,
    ...(o.redirectUri === undefined ? {} : { user_redirect_uri: o.redirectUri }),
  });
  expectStatus("authorize", authorization, 200);
  const browser = o.consent?.browser ?? new Browser(net.fetch);
  const consented = await consent(String(authorization.json.authorization_url), { ...o.consent, browser, redirectUri: o.redirectUri });
  if (consented.code === undefined) throw new Error(`consent gave no code: ${consented.page.status} ${consented.page.url}\n${consented.page.body.slice(0, 800)}`);
  const token = await exchange(net, agent, client, { code: consented.code, ath_session_id: String(authorization.json.ath_session_id) });
  expectStatus("token", token, 200);
  return { agent, client, registration, authorization, consent: consented, token, accessToken: String(token.json.access_token) };
}

function expectStatus(step: string, result: { status: number; text: string }, status: number): void {
  if (result.status !== status) throw new Error(`${step}: expected ${status}, got ${result.status}: ${result.text}`);
}
