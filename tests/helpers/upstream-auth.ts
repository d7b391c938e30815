/**
 * A real OAuth 2.0 / OIDC authorization server for the e2e tests: `oidc-provider` (v9) on a loopback port, run
 * in process under Bun. PKCE S256 is required for every client, the gateway's clients get refresh tokens (rotated),
 * access tokens are opaque and introspectable, and every grant is counted so tests can see refreshes happen.
 *
 * The login/consent interaction is a minimal HTML form (login, scopes, Approve/Deny): a test drives it with the
 * cookie-jar browser and can override `scopes` (grant only some) or press Deny (→ `error=access_denied`).
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import Provider from "oidc-provider";
import { randomString } from "./net.ts";

/** Re-exported: choose the gateway port first, so the upstream can register `<gateway>/ath/callback`. */
export { freePort } from "./net.ts";

export const DEFAULT_UPSTREAM_SCOPES = ["openid", "offline_access", "mail:read", "mail:send", "calendar:read"];

export interface UpstreamAuthOptions {
  /** Redirect URIs of the gateway clients, normally `[<gateway base>/ath/callback]`. */
  redirectUris: string[];
  scopes?: string[];
  /** Lifetime of upstream access tokens in seconds (default 3600). */
  accessTokenTtl?: number;
  /** The account a login form logs in as unless the test overrides the `login` field. */
  defaultAccount?: string;
}

export interface OAuthClientCredentials {
  client_id: string;
  client_secret: string;
}

export interface UpstreamAuth {
  issuer: string;
  port: number;
  authorizeEndpoint: string;
  tokenEndpoint: string;
  introspectionEndpoint: string;
  revocationEndpoint: string;
  userinfoEndpoint: string;
  /** Confidential client authenticating with client_secret_post. */
  postClient: OAuthClientCredentials;
  /** Confidential client authenticating with client_secret_basic. */
  basicClient: OAuthClientCredentials;
  /** The resource server's own client, used by the sample API to call introspection. */
  apiClient: OAuthClientCredentials;
  /** Every provider event seen, in order: `grant.success:authorization_code`, `refresh_token.consumed`, … */
  events: string[];
  count(event: string): number;
  /** Every upstream access and refresh token value issued (opaque: the value is the jti), for at-rest checks. */
  issuedTokens: { kind: string; value: string }[];
  /** Destroys every grant issued so far: its access and refresh tokens stop working (a user revoking access). */
  revokeAllGrants(): Promise<void>;
  /** Destroys one upstream access token (its refresh token stays valid): the API then answers 401 for it. */
  revokeAccessToken(value: string): Promise<boolean>;
  stop(): Promise<void>;
}

/** Starts oidc-provider on 127.0.0.1 with a free port and returns its endpoints and client credentials. */
export async function startUpstreamAuth(options: UpstreamAuthOptions): Promise<UpstreamAuth> {
  const scopes = options.scopes ?? DEFAULT_UPSTREAM_SCOPES;
  const defaultAccount = options.defaultAccount ?? "alice";
  const postClient = { client_id: "gw-post", client_secret: randomString(32) };
  const basicClient = { client_id: "gw-basic", client_secret: randomString(32) };
  const apiClient = { client_id: "sample-api", client_secret: randomString(32) };
  const events: string[] = [];
  const grantIds: string[] = [];
  const issuedTokens: { kind: string; value: string }[] = [];
  let provider: Provider | undefined;

  const server = createServer((req, res) => {
    if (provider === undefined) {
      res.writeHead(503).end();
      return;
    }
    if ((req.url ?? "").startsWith("/interaction/")) {
      interaction(provider, req, res).catch((error: unknown) => {
        res.writeHead(500, { "content-type": "text/plain" }).end(String(error));
      });
      return;
    }
    provider.callback()(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  if (address === null || typeof address === "string") throw new TypeError("no port assigned");
  const issuer = `http://127.0.0.1:${address.port}`;

  const gatewayClient = {
    redirect_uris: options.redirectUris,
    grant_types: ["authorization_code", "refresh_token"],
    response_types: ["code"],
  };
  provider = new Provider(issuer, {
    clients: [
      { ...postClient, ...gatewayClient, token_endpoint_auth_method: "client_secret_post" },
      { ...basicClient, ...gatewayClient, token_endpoint_auth_method: "client_secret_basic" },
      { ...apiClient, redirect_uris: [], grant_types: [], response_types: [] },
    ],
    scopes,
    claims: { openid: ["sub"] },
    cookies: { keys: [randomString(32)] },
    findAccount: (_ctx: unknown, sub: string) => ({ accountId: sub, claims: () => ({ sub }) }),
    features: {
      devInteractions: { enabled: false },
      introspection: { enabled: true },
      revocation: { enabled: true },
    },
    pkce: { required: () => true },
    issueRefreshToken: async (_ctx: unknown, client: { clientId: string }) => client.clientId !== apiClient.client_id,
    rotateRefreshToken: true,
    ttl: {
      AccessToken: options.accessTokenTtl ?? 3600,
      AuthorizationCode: 60,
      Grant: 14 * 24 * 3600,
      IdToken: 3600,
      Interaction: 600,
      RefreshToken: 14 * 24 * 3600,
      Session: 24 * 3600,
    },
  });

  const record = (name: string) => () => events.push(name);
  for (const name of ["access_token.saved", "refresh_token.saved"]) {
    provider.on(name, (model) => {
      if (model.jti !== undefined) issuedTokens.push({ kind: model.kind ?? name, value: model.jti });
    });
  }
  provider.on("grant.success", (ctx) => events.push(`grant.success:${String(ctx.oidc.params?.grant_type)}`));
  provider.on("grant.error", (ctx) => events.push(`grant.error:${String(ctx.oidc.params?.grant_type)}`));
  for (const name of [
    "authorization_code.consumed",
    "refresh_token.consumed",
    "access_token.destroyed",
    "refresh_token.destroyed",
    "grant.revoked",
    "introspection.error",
    "revocation.error",
    "authorization.error",
    "server_error",
  ]) {
    provider.on(name, record(name));
  }

  return {
    issuer,
    port: address.port,
    authorizeEndpoint: `${issuer}/auth`,
    tokenEndpoint: `${issuer}/token`,
    introspectionEndpoint: `${issuer}/token/introspection`,
    revocationEndpoint: `${issuer}/token/revocation`,
    userinfoEndpoint: `${issuer}/me`,
    postClient,
    basicClient,
    apiClient,
    events,
    issuedTokens,
    count: (event) => events.filter((e) => e === event).length,
    async revokeAllGrants() {
      for (const id of grantIds.splice(0)) {
        const grant = await provider?.Grant.find(id);
        await grant?.destroy();
      }
    },
    async revokeAccessToken(value) {
      const token = await provider?.AccessToken.find(value);
      await token?.destroy();
      return token !== undefined;
    },
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };

  // internal

  /** GET renders the login+consent form; POST finishes the interaction with a grant or access_denied. */
  async function interaction(p: Provider, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const details = await p.interactionDetails(req, res);
    const requested = String(details.params.scope ?? "")
      .split(" ")
      .filter(Boolean);
    if (req.method === "GET") {
      res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(loginPage(details.uid, requested));
      return;
    }
    const form = new URLSearchParams(await readBody(req));
    if (form.get("decision") !== "approve") {
      await p.interactionFinished(req, res, { error: "access_denied", error_description: "the user denied access" });
      return;
    }
    const accountId = form.get("login") || defaultAccount;
    const granted = (form.get("scopes") ?? "").split(" ").filter((s) => requested.includes(s));
    const grant = new p.Grant({ accountId, clientId: String(details.params.client_id) });
    grant.addOIDCScope(granted.join(" "));
    // scopes left out are rejected explicitly, or oidc-provider would prompt for consent again
    const rejected = requested.filter((s) => !granted.includes(s));
    if (rejected.length > 0) grant.rejectOIDCScope(rejected.join(" "));
    const grantId = await grant.save();
    grantIds.push(grantId);
    await p.interactionFinished(req, res, { login: { accountId }, consent: { grantId } }, { mergeWithLastSubmission: false });
  }

  function loginPage(uid: string, requested: string[]): string {
    const attr = (s: string) => s.replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/</g, "&lt;");
    return `<!doctype html><html><body><h1>Sign in to the upstream provider</h1>
<form action="/interaction/${attr(uid)}" method="post">
<input name="login" value="${attr(defaultAccount)}">
<input type="hidden" name="scopes" value="${attr(requested.join(" "))}">
<button type="submit" name="decision" value="approve">Approve</button>
<button type="submit" name="decision" value="deny">Deny</button>
</form></body></html>`;
  }
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}
