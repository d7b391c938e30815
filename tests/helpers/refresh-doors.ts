/**
 * The two doors a refresh family comes through (DESIGN §17, §18), behind one interface so that one test runs against
 * both: an ATH agent at /ath/token (attested, ATH error shape) and an MCP client at /oauth/token (dynamic
 * registration, PKCE, OAuth error shape). Each starts a family the way its clients do — registration, the person's
 * consent in the cookie-jar browser, the code exchange — presents refresh tokens, says how it refuses one (the exact
 * body of its wire), and calls its resource with an access token (the proxy, or the MCP endpoint). Over a real
 * gateway's base URL or an in-process one (`Net`), with a clock that may be the test's.
 */
import { expect } from "bun:test";
import { attest, makeAgent, type TestAgent } from "./attestations.ts";
import { authorize, call, consent, exchange, register, type ClientCredentials, type HttpResult, type Net } from "./agent.ts";
import { Browser } from "./browser.ts";
import { expectError } from "./expect-error.ts";

/** Why a refresh is refused, in the domain's terms; each door words it for its wire. */
export type Refusal = "reused" | "revoked" | "expired" | "spent" | "unknown" | "upstream" | "widening" | "unapproved";

/** A family's holder: its client, its first tokens. */
export interface Holder {
  /** The agent record the tokens are issued to (the MCP client's own record, for an MCP client). */
  clientId: string;
  access: string;
  refresh: string;
  refreshExpiresIn: number;
  /** The door's own credentials of the client. */
  creds: AgentCreds | McpCreds;
}

/** A refresh's tokens, as the door answered them. */
export interface Tokens {
  access: string;
  refresh: string;
  refreshExpiresIn: number;
  scopes: string[];
}

export interface Door {
  readonly name: string;
  /** A new client, the person's consent for `scopes` of `mail`, the code exchanged. */
  start(scopes?: string[]): Promise<Holder>;
  /** `refreshToken` presented by `h`'s client (with `scope`, space-separated, when given). */
  refresh(h: Holder, refreshToken: string, scope?: string): Promise<HttpResult>;
  /** Asserts the door's exact refusal. */
  expectRefused(r: HttpResult, why: Refusal): void;
  /** The tokens of a 200, else throws with the body. */
  tokens(r: HttpResult): Tokens;
  /** Calls the door's resource with `access`: the HTTP status (401: refused). */
  use(access: string): Promise<number>;
}

/** The provider both doors reach (`mail`): an API and an MCP server at the same upstream. */
export const PROVIDER = "mail";

export function agentDoor(net: Net, now: () => number): Door {
  return {
    name: "an ATH agent at /ath/token",
    async start(scopes = ["mail:read", "mail:send"]) {
      const agent = await makeAgent();
      const reg = await register(net, agent, { providers: [{ provider_id: PROVIDER, scopes }], attestation: await attest(agent, net.baseUrl, now()) });
      if (reg.status !== 201) throw new Error(`register: ${reg.status} ${reg.text}`);
      const client: ClientCredentials = { client_id: String(reg.json.client_id), client_secret: String(reg.json.client_secret) };
      const auth = await authorize(net, agent, client, { provider_id: PROVIDER, scopes, attestation: await attest(agent, net.baseUrl, now()) });
      if (auth.status !== 200) throw new Error(`authorize: ${auth.status} ${auth.text}`);
      const consented = await consent(String(auth.json.authorization_url), { browser: new Browser(net.fetch) });
      if (!consented.code) throw new Error(`consent gave no code: ${consented.page.status} ${consented.page.body.slice(0, 300)}`);
      const token = await exchange(net, agent, client, {
        code: consented.code,
        ath_session_id: String(auth.json.ath_session_id),
        attestation: await attest(agent, `${net.baseUrl}/ath/token`, now()),
      });
      const t = this.tokens(token);
      return { clientId: client.client_id, access: t.access, refresh: t.refresh, refreshExpiresIn: t.refreshExpiresIn, creds: { kind: "agent", agent, client } };
    },
    async refresh(h, refreshToken, scope) {
      const { agent, client } = h.creds as AgentCreds;
      const form = { grant_type: "refresh_token", ...client, agent_attestation: await attest(agent, `${net.baseUrl}/ath/token`, now()), refresh_token: refreshToken };
      return call(`${net.baseUrl}/ath/token`, { form: scope === undefined ? form : { ...form, scope }, fetch: net.fetch });
    },
    expectRefused(r, why) {
      if (why === "unapproved") return void expectError(r, "AGENT_UNAPPROVED");
      if (why === "widening") return void expectError(r, "INVALID_REQUEST", { reason: "scope_widening" });
      if (why === "upstream") return void expectError(r, "INVALID_GRANT", { reason: "refresh_token_revoked", upstream: "upstream_grant_revoked" });
      const parsed = expectError(r, "INVALID_GRANT");
      expect(parsed.details?.reason).toBe(why === "unknown" ? undefined : `refresh_token_${why}`);
    },
    tokens(r) {
      if (r.status !== 200) throw new Error(`expected tokens, got ${r.status} ${r.text}`);
      const j = r.json as Record<string, unknown>;
      return { access: String(j.access_token), refresh: String(j.refresh_token), refreshExpiresIn: Number(j.refresh_expires_in), scopes: j.effective_scopes as string[] };
    },
    async use(access) {
      return (await call(`${net.baseUrl}/ath/proxy/${PROVIDER}/v1/messages`, { headers: { authorization: `Bearer ${access}` }, fetch: net.fetch })).status;
    },
  };
}

/** The MCP client's redirect URI: a loopback app (the browser stops before it). */
export const MCP_REDIRECT = "http://127.0.0.1:33418/callback";

/** What an MCP client is told for each refusal (RFC 6749 §5.2 codes; the descriptions of oauth-server/token.ts). */
export const OAUTH_REFUSALS: Record<Refusal, { error: string; error_description: string }> = {
  reused: { error: "invalid_grant", error_description: "the refresh token was already used: its whole family is revoked" },
  revoked: { error: "invalid_grant", error_description: "the refresh token was revoked" },
  expired: { error: "invalid_grant", error_description: "the refresh token expired" },
  spent: { error: "invalid_grant", error_description: "the refresh token was just rotated" },
  unknown: { error: "invalid_grant", error_description: "Unknown refresh token" },
  upstream: { error: "invalid_grant", error_description: "the person's upstream grant is gone: authorize again" },
  widening: { error: "invalid_scope", error_description: "a refresh cannot widen the scopes: mail:send" },
  unapproved: { error: "invalid_grant", error_description: "an administrator suspended this client" },
};

export function mcpDoor(net: Net): Door {
  const resource = `${net.baseUrl}/mcp/${PROVIDER}`;
  return {
    name: "an MCP client at /oauth/token",
    async start(scopes = ["mail:read", "mail:send"]) {
      const { clientId, code, verifier } = await mcpCode(net, { scopes });
      const token = await call(`${net.baseUrl}/oauth/token`, {
        form: { grant_type: "authorization_code", code, code_verifier: verifier, client_id: clientId, redirect_uri: MCP_REDIRECT, resource },
        fetch: net.fetch,
      });
      const t = this.tokens(token);
      return { clientId, access: t.access, refresh: t.refresh, refreshExpiresIn: t.refreshExpiresIn, creds: { kind: "mcp", clientId } };
    },
    refresh(h, refreshToken, scope) {
      const form = { grant_type: "refresh_token", refresh_token: refreshToken, client_id: (h.creds as McpCreds).clientId };
      return call(`${net.baseUrl}/oauth/token`, { form: scope === undefined ? form : { ...form, scope }, fetch: net.fetch });
    },
    expectRefused(r, why) {
      expect({ status: r.status, body: r.json }).toEqual({ status: 400, body: OAUTH_REFUSALS[why] });
      expect(r.headers.get("cache-control")).toBe("no-store");
    },
    tokens(r) {
      if (r.status !== 200) throw new Error(`expected tokens, got ${r.status} ${r.text}`);
      const j = r.json as Record<string, unknown>;
      expect(j.token_type).toBe("Bearer");
      return { access: String(j.access_token), refresh: String(j.refresh_token), refreshExpiresIn: Number(j.refresh_expires_in), scopes: String(j.scope).split(" ") };
    },
    async use(access) {
      const r = await call(`${net.baseUrl}/mcp/${PROVIDER}`, {
        json: { jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "refresh-doors", version: "1" } } },
        headers: { authorization: `Bearer ${access}`, accept: "application/json, text/event-stream" },
        fetch: net.fetch,
      });
      return r.status;
    },
  };
}

/**
 * An MCP client's way to a code: registered at /oauth/register (public, or confidential with `auth`), /oauth/authorize
 * with PKCE S256 and the resource, the person's Approve on ath's consent page and at the upstream; the code that came
 * back to the redirect URI, with what the exchange needs.
 */
export async function mcpCode(net: Net, o: { scopes?: string[]; auth?: "none" | "client_secret_basic" | "client_secret_post" } = {}) {
  const reg = await call(`${net.baseUrl}/oauth/register`, {
    json: { client_name: "Test MCP Client", redirect_uris: [MCP_REDIRECT], token_endpoint_auth_method: o.auth ?? "none", grant_types: ["authorization_code", "refresh_token"] },
    fetch: net.fetch,
  });
  if (reg.status !== 201) throw new Error(`registration: ${reg.status} ${reg.text}`);
  const clientId = String(reg.json.client_id);
  const verifier = crypto.randomUUID().replaceAll("-", "") + crypto.randomUUID().replaceAll("-", "");
  const challenge = new Bun.CryptoHasher("sha256").update(verifier).digest("base64url");
  const state = `s-${crypto.randomUUID()}`;
  const url = new URL(`${net.baseUrl}/oauth/authorize`);
  const params = {
    response_type: "code", client_id: clientId, redirect_uri: MCP_REDIRECT, code_challenge: challenge, code_challenge_method: "S256", state,
    resource: `${net.baseUrl}/mcp/${PROVIDER}`, scope: (o.scopes ?? ["mail:read", "mail:send"]).join(" "),
  };
  for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
  const consented = await consent(url.href, { browser: new Browser(net.fetch), redirectUri: MCP_REDIRECT });
  if (!consented.code || consented.state !== state) throw new Error(`no code came back: ${consented.page.status} ${consented.page.url}`);
  return { clientId, clientSecret: reg.json.client_secret === undefined ? null : String(reg.json.client_secret), code: consented.code, verifier };
}

// internal

interface AgentCreds {
  kind: "agent";
  agent: TestAgent;
  client: ClientCredentials;
}

interface McpCreds {
  kind: "mcp";
  clientId: string;
}
