/**
 * The provider templates end to end: a mock of each provider (tests/helpers/providers/) and one `ath serve` whose
 * providers file names each template with only the mock's URLs and client credentials — what an operator writes,
 * pointed at a double. `TEMPLATE_CASES` says, per provider, what the agent asks and what a provider-correct gateway
 * must have sent; `checkProviderRequests` asserts it from what the mock recorded.
 */
import { Database } from "bun:sqlite";
import { join } from "node:path";
import { expect } from "bun:test";
import { call } from "./agent.ts";
import { startGateway, type Gateway } from "./gateway.ts";
import { freePort } from "./net.ts";
import type { MockOptions, MockProvider, Recorded } from "./providers/base.ts";
import { startDropboxMock } from "./providers/dropbox.ts";
import { startGitHubMock } from "./providers/github.ts";
import { startGitLabMock } from "./providers/gitlab.ts";
import { startGoogleMock } from "./providers/google.ts";
import { startLinearMock } from "./providers/linear.ts";
import { startMicrosoftMock } from "./providers/microsoft.ts";
import { startNotionMock } from "./providers/notion.ts";
import { startSlackMock } from "./providers/slack.ts";

const G = "https://www.googleapis.com/auth/";

export const MOCKS: Record<string, (o: MockOptions) => MockProvider> = {
  dropbox: startDropboxMock,
  github: startGitHubMock,
  gitlab: startGitLabMock,
  google: startGoogleMock,
  linear: startLinearMock,
  microsoft: startMicrosoftMock,
  notion: startNotionMock,
  slack: startSlackMock,
};

export interface TemplateCase {
  /** The scopes the agent registers for and asks. */
  scopes: string[];
  /** Authorize parameters the provider must have received (null: must be absent). */
  authorize: Record<string, string | null>;
  /** How the token requests must reach the provider. */
  token: { auth: "basic" | "post"; format: "form" | "json"; verifier: boolean };
  /** The user id the gateway must record (the mock's person is 4242). */
  userId: string;
  /** The agent's proxied call: a path the scopes allow, and a piece of the provider's answer. */
  api: { method: string; path: string; json?: unknown; answer: string };
  /** Static headers the provider's API must receive (lower-case names). */
  apiHeaders?: Record<string, string>;
  /** Fields of the refresh request besides grant_type and refresh_token (null: must be absent); none: no refresh token. */
  refresh: Record<string, string | null> | "none";
  /**
   * What makes the gateway refresh: the API refusing the token (401), or the token's `expires_in` running out —
   * Slack answers an expired token with HTTP 200 `ok:false`, so its mock issues tokens shorter than the gateway's
   * 30 s refresh margin and every proxied call refreshes first.
   */
  refreshOn?: "rejection" | "expiry";
  mockOptions?: Partial<MockOptions>;
  /** How revocation must reach the provider, one entry per request in order; [] when the provider has no endpoint. */
  revoke: { method: string; auth: "basic" | "post" | "bearer" | "none"; format: "form" | "json" | "none"; fields?: Record<string, string> }[];
}

export const TEMPLATE_CASES: Record<string, TemplateCase> = {
  github: {
    scopes: ["repo", "read:user"],
    authorize: { scope: "repo read:user", code_challenge_method: "S256" },
    token: { auth: "post", format: "form", verifier: true },
    userId: "4242",
    api: { method: "GET", path: "user/repos", answer: '"private":true' },
    apiHeaders: { "x-github-api-version": "2022-11-28" },
    refresh: "none",
    revoke: [{ method: "DELETE", auth: "basic", format: "json", fields: { access_token: "<access>" } }],
  },
  gitlab: {
    scopes: ["read_api"],
    authorize: { scope: "read_api openid", response_type: "code", code_challenge_method: "S256" },
    token: { auth: "post", format: "form", verifier: true },
    userId: "4242",
    api: { method: "GET", path: "user", answer: '"username":"octo-person"' },
    refresh: { scope: null },
    revoke: [
      { method: "POST", auth: "post", format: "form", fields: { token: "<refresh>", token_type_hint: "refresh_token" } },
      { method: "POST", auth: "post", format: "form", fields: { token: "<access>", token_type_hint: "access_token" } },
    ],
  },
  google: {
    scopes: [`${G}gmail.readonly`],
    authorize: { scope: `${G}gmail.readonly openid`, access_type: "offline", prompt: "consent", code_challenge_method: "S256", include_granted_scopes: null },
    token: { auth: "post", format: "form", verifier: true },
    userId: "4242",
    api: { method: "GET", path: "gmail/v1/users/me/profile", answer: '"messagesTotal":3' },
    refresh: { scope: null },
    revoke: [
      { method: "POST", auth: "none", format: "form", fields: { token: "<refresh>" } },
      { method: "POST", auth: "none", format: "form", fields: { token: "<access>" } },
    ],
  },
  microsoft: {
    scopes: ["User.Read"],
    authorize: { scope: "User.Read openid offline_access", code_challenge_method: "S256" },
    token: { auth: "post", format: "form", verifier: true },
    userId: "4242",
    api: { method: "GET", path: "me", answer: '"displayName":"Octo Person"' },
    refresh: { scope: "User.Read openid offline_access" },
    revoke: [],
  },
  slack: {
    scopes: ["channels:history", "chat:write"],
    authorize: { user_scope: "channels:history,chat:write", scope: null, code_challenge: null },
    token: { auth: "basic", format: "form", verifier: false },
    userId: "U4242",
    api: { method: "GET", path: "conversations.history?channel=C0MOCK", answer: '"text":"hello from the mock"' },
    refresh: {},
    refreshOn: "expiry",
    mockOptions: { accessTokenTtl: 5 },
    revoke: [{ method: "POST", auth: "bearer", format: "none" }],
  },
  notion: {
    scopes: ["read_content"],
    authorize: { owner: "user", response_type: "code", scope: null, code_challenge: null },
    token: { auth: "basic", format: "json", verifier: false },
    userId: "user-4242",
    api: { method: "POST", path: "search", json: { query: "" }, answer: '"plain_text":"Mock page"' },
    apiHeaders: { "notion-version": "2025-09-03" },
    refresh: {},
    revoke: [{ method: "POST", auth: "basic", format: "json", fields: { token: "<access>" } }],
  },
  linear: {
    scopes: ["read", "issues:create"],
    authorize: { scope: "read,issues:create", code_challenge_method: "S256" },
    token: { auth: "post", format: "form", verifier: true },
    userId: "user-4242",
    api: { method: "POST", path: "graphql", json: { query: "{ issues { nodes { identifier } } }" }, answer: '"identifier":"ENG-1"' },
    refresh: {},
    revoke: [{ method: "POST", auth: "bearer", format: "none" }],
  },
  dropbox: {
    scopes: ["files.metadata.read"],
    authorize: { scope: "files.metadata.read", token_access_type: "offline", code_challenge_method: "S256" },
    token: { auth: "basic", format: "form", verifier: true },
    userId: "dbid:AA4242",
    api: { method: "POST", path: "files/list_folder", json: { path: "" }, answer: '"name":"notes.txt"' },
    refresh: {},
    revoke: [{ method: "POST", auth: "bearer", format: "none" }],
  },
};

export interface TemplateWorld {
  gw: Gateway;
  baseUrl: string;
  mocks: Record<string, MockProvider>;
  stop(): Promise<void>;
}

/** A mock per provider id and one `ath serve` with `{template: id, …the mock's URLs and credentials}` for each. */
export async function startTemplateWorld(ids: string[], o: { binary?: boolean } = {}): Promise<TemplateWorld> {
  const port = await freePort();
  const redirectUris = [`http://127.0.0.1:${port}/ath/callback`];
  const mocks = Object.fromEntries(ids.map((id) => [id, MOCKS[id]!({ redirectUris, ...TEMPLATE_CASES[id]!.mockOptions })]));
  const providers = Object.fromEntries(ids.map((id) => [id, { template: id, ...mocks[id]!.entry }]));
  const stopMocks = () => Promise.all(Object.values(mocks).map((m) => m.stop()));
  let gw: Gateway;
  try {
    gw = await startGateway({ port, providers, binary: o.binary });
  } catch (error) {
    await stopMocks();
    throw error;
  }
  return {
    gw,
    baseUrl: gw.baseUrl,
    mocks,
    async stop() {
      await gw.cleanup();
      await stopMocks();
    },
  };
}

/** The agent's proxied call of `c.api` with its ATH token. */
export function proxiedCall(w: TemplateWorld, id: string, accessToken: string) {
  const { api } = TEMPLATE_CASES[id]!;
  return call(`${w.baseUrl}/ath/proxy/${id}/${api.path}`, {
    method: api.method,
    headers: { authorization: `Bearer ${accessToken}` },
    ...(api.json === undefined ? {} : { json: api.json }),
  });
}

/** The user id the gateway recorded with the agent's newest token for `providerId` (read from its SQLite store). */
export function recordedUserId(w: TemplateWorld, providerId: string): string | undefined {
  const db = new Database(join(w.gw.dataDir, "ath.db"), { readonly: true });
  try {
    const row = db.query("SELECT user_id FROM tokens WHERE provider_id = ? ORDER BY created_at DESC LIMIT 1").get(providerId) as { user_id: string } | null;
    return row?.user_id;
  } finally {
    db.close();
  }
}

/** Asserts the authorize request and every token request the provider received from the gateway. */
export function checkAuthorizeAndToken(mock: MockProvider, c: TemplateCase): void {
  const authorize = mock.core.requestsTo("authorize").at(-1);
  expect(authorize).toBeDefined();
  for (const [name, value] of Object.entries(c.authorize)) expect({ [name]: authorize!.query.get(name) }).toEqual({ [name]: value });
  expect(authorize!.query.get("client_id")).toBe(mock.core.clientId);
  const tokens = mock.core.requestsTo("token");
  expect(tokens.length).toBeGreaterThan(0);
  for (const t of tokens) {
    const fields = bodyFields(t, c.token.format);
    expect(contentType(t)).toBe(c.token.format === "json" ? "application/json" : "application/x-www-form-urlencoded");
    expect(t.headers.get("accept")).toContain("application/json");
    if (c.token.auth === "basic") {
      expect(t.headers.get("authorization")).toBe(basicOf(mock));
      expect(fields.client_secret).toBeUndefined();
    } else {
      expect(t.headers.get("authorization")).toBeNull();
      expect({ client_id: fields.client_id, client_secret: fields.client_secret }).toEqual({ client_id: mock.core.clientId, client_secret: mock.core.clientSecret });
    }
    if (t.status !== 200) throw new Error(`the provider refused a token request (${t.status}): ${t.body}`);
  }
  const exchange = bodyFields(tokens[0]!, c.token.format);
  expect(exchange.grant_type).toBe("authorization_code");
  expect(typeof exchange.code_verifier === "string").toBe(c.token.verifier);
}

/** Asserts the refresh request(s): the provider's format (checked above) plus the case's fields. */
export function checkRefresh(mock: MockProvider, c: TemplateCase): void {
  if (c.refresh === "none") return;
  const refreshes = mock.core.requestsTo("token").filter((t) => bodyFields(t, c.token.format).grant_type === "refresh_token");
  expect(refreshes.length).toBe(c.refreshOn === "expiry" ? 2 : 1);
  for (const refresh of refreshes) {
    const fields = bodyFields(refresh, c.token.format);
    expect(typeof fields.refresh_token).toBe("string");
    for (const [name, value] of Object.entries(c.refresh)) expect({ [name]: fields[name] ?? null }).toEqual({ [name]: value });
    expect(refresh.status).toBe(200);
  }
}

/** Asserts the revocation requests against the tokens the provider had issued for the grant. */
export function checkRevocation(mock: MockProvider, c: TemplateCase, issued: { access: string; refresh: string | null }): void {
  const revocations = mock.core.requestsTo("revoke");
  expect(revocations.length).toBe(c.revoke.length);
  c.revoke.forEach((want, i) => {
    const r = revocations[i]!;
    expect(r.method).toBe(want.method);
    const auth = r.headers.get("authorization");
    if (want.auth === "bearer") expect(auth).toBe(`Bearer ${issued.access}`);
    else if (want.auth === "basic") expect(auth).toBe(basicOf(mock));
    else expect(auth).toBeNull();
    if (want.format === "none") expect(r.body).toBe("");
    else expect(contentType(r)).toBe(want.format === "json" ? "application/json" : "application/x-www-form-urlencoded");
    const fields = want.format === "none" ? {} : bodyFields(r, want.format);
    for (const [name, value] of Object.entries(want.fields ?? {})) {
      const expected = value === "<access>" ? issued.access : value === "<refresh>" ? issued.refresh : value;
      expect({ [name]: fields[name] }).toEqual({ [name]: expected });
    }
    if (want.auth === "post") expect({ id: fields.client_id, secret: fields.client_secret }).toEqual({ id: mock.core.clientId, secret: mock.core.clientSecret });
    else expect(fields.client_secret).toBeUndefined();
    expect(r.status).toBeLessThan(500);
  });
}

// internal

function contentType(r: Recorded): string {
  return (r.headers.get("content-type") ?? "").split(";")[0]!.trim();
}

function bodyFields(r: Recorded, format: "form" | "json"): Record<string, unknown> {
  return format === "json" ? (JSON.parse(r.body) as Record<string, unknown>) : Object.fromEntries(new URLSearchParams(r.body));
}

function basicOf(mock: MockProvider): string {
  return `Basic ${Buffer.from(`${encodeURIComponent(mock.core.clientId)}:${encodeURIComponent(mock.core.clientSecret)}`).toString("base64")}`;
}
