/**
 * An MCP client as hosts build one with the official SDK: its Streamable HTTP client transport and an
 * OAuthClientProvider kept in memory — registering dynamically, or naming a client ID metadata document
 * (`clientMetadataUrl`) that this helper serves — and a loopback redirect URI that catches what the authorization
 * server sends back (code, state, iss, error).
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { OAuthClientProvider } from "@modelcontextprotocol/sdk/client/auth.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from "@modelcontextprotocol/sdk/shared/auth.js";

export interface Landing {
  code: string | null;
  state: string | null;
  iss: string | null;
  error: string | null;
}

export class MemoryOAuthProvider implements OAuthClientProvider {
  info: OAuthClientInformationMixed | undefined;
  saved: OAuthTokens | undefined;
  verifier = "";
  authorizationUrl: URL | undefined;
  constructor(
    readonly redirectUrl: string,
    readonly clientMetadataUrl?: string,
    readonly name = "Test MCP Client",
  ) {}
  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: this.name,
      redirect_uris: [this.redirectUrl],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    };
  }
  clientInformation() {
    return this.info;
  }
  saveClientInformation(i: OAuthClientInformationMixed) {
    this.info = i;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(t: OAuthTokens) {
    this.saved = t;
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(v: string) {
    this.verifier = v;
  }
  codeVerifier() {
    return this.verifier;
  }
}

/** A loopback "app": its /callback records what the authorization server sent; /client.json is a metadata document. */
export async function startClientHost(): Promise<{ origin: string; landings: Landing[]; documentUrl: string; redirectUrl: string; stop(): Promise<void> }> {
  const landings: Landing[] = [];
  let origin = "";
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch(req) {
      const url = new URL(req.url);
      if (url.pathname === "/callback") {
        const q = url.searchParams;
        landings.push({ code: q.get("code"), state: q.get("state"), iss: q.get("iss"), error: q.get("error") });
        return new Response("<!doctype html><title>Connected</title><p>You can close this window.</p>", { headers: { "content-type": "text/html" } });
      }
      if (url.pathname === "/client.json") {
        return Response.json({
          client_id: `${origin}/client.json`,
          client_name: "Documented MCP Client",
          client_uri: origin,
          redirect_uris: [`${origin}/callback`],
          grant_types: ["authorization_code", "refresh_token"],
          response_types: ["code"],
          token_endpoint_auth_method: "none",
        });
      }
      return new Response("not found", { status: 404 });
    },
  });
  origin = `http://127.0.0.1:${server.port}`;
  return { origin, landings, documentUrl: `${origin}/client.json`, redirectUrl: `${origin}/callback`, stop: () => server.stop(true) };
}

export function mcpClient(url: string, provider: OAuthClientProvider): { client: Client; transport: StreamableHTTPClientTransport } {
  const transport = new StreamableHTTPClientTransport(new URL(url), { authProvider: provider });
  const client = new Client({ name: "ath-test-host", version: "1.0.0" });
  return { client, transport };
}

/**
 * The code grant of an MCP client against ath, run by hand exactly as the SDK runs it (PKCE S256, resource), with the
 * person's part in Chromium: ath's consent page, then the upstream's (oidc-provider) as `login`. Returns the token
 * response.
 */
export async function codeGrant(
  page: import("playwright-core").Page,
  o: {
    base: string;
    clientId: string;
    redirectUri: string;
    resource: string;
    landings: Landing[];
    /** The person's account at oidc-provider; or `upstream`, the person's part at another provider's page. */
    login?: string;
    upstream?: (page: import("playwright-core").Page) => Promise<void>;
    /** Where the code is exchanged (default: `{base}/oauth/token`; another instance's, in multi-instance tests). */
    tokenEndpoint?: string;
  },
): Promise<{ access_token: string; refresh_token: string; scope: string; token_type: string }> {
  const verifier = crypto.randomUUID().replaceAll("-", "") + crypto.randomUUID().replaceAll("-", "");
  const challenge = new Bun.CryptoHasher("sha256").update(verifier).digest("base64url");
  const url = new URL(`${o.base}/oauth/authorize`);
  const params = { response_type: "code", client_id: o.clientId, redirect_uri: o.redirectUri, code_challenge: challenge, code_challenge_method: "S256", state: "s-" + crypto.randomUUID(), resource: o.resource };
  for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
  const before = o.landings.length;
  await page.goto(url.href);
  await Promise.all([page.waitForNavigation(), page.getByRole("button", { name: "Approve", exact: true }).click()]);
  if (o.upstream) await o.upstream(page);
  else {
    await page.locator('input[name="login"]').fill(o.login ?? "alice");
    await Promise.all([page.waitForNavigation(), page.getByRole("button", { name: "Approve", exact: true }).click()]);
  }
  const landing = o.landings[before];
  if (!landing?.code) throw new Error(`no code came back: ${JSON.stringify(landing)}`);
  const res = await fetch(o.tokenEndpoint ?? `${o.base}/oauth/token`, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ grant_type: "authorization_code", code: landing.code, code_verifier: verifier, client_id: o.clientId, redirect_uri: o.redirectUri, resource: o.resource }).toString(),
  });
  if (res.status !== 200) throw new Error(`token exchange: ${res.status} ${await res.text()}`);
  return res.json();
}

/** A public client registered at ath's /oauth/register (RFC 7591). */
export async function registerClient(base: string, redirectUri: string, name = "Test MCP Client"): Promise<string> {
  const res = await fetch(`${base}/oauth/register`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ client_name: name, redirect_uris: [redirectUri], token_endpoint_auth_method: "none", grant_types: ["authorization_code", "refresh_token"] }),
  });
  if (res.status !== 201) throw new Error(`registration: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { client_id: string }).client_id;
}
