/**
 * What the provider mocks share: a real HTTP server (Bun.serve on 127.0.0.1, port 0) that records every request,
 * the person's consent page (Authorize / Cancel, served under /__mock/), authorization codes with PKCE, access and
 * refresh tokens with expiry, rotation and revocation, the client-authentication and body parsers, and id_tokens.
 * Each provider file (github.ts, slack.ts, …) adds only its routes and its wire format — where a provider answers a
 * wrong request in its own way, the provider file answers that way.
 */
import { exportJWK, generateKeyPair, SignJWT } from "jose";
import { randomString } from "../net.ts";

export interface MockUser {
  id: string;
  login: string;
  name: string;
  email: string;
}

export const DEFAULT_USER: MockUser = { id: "4242", login: "octo-person", name: "Octo Person", email: "person@example.test" };

/** One request as the mock received it; `route` names the handler that answered (authorize, token, api, …). */
export interface Recorded {
  route: string;
  method: string;
  path: string;
  query: URLSearchParams;
  headers: Headers;
  body: string;
  status: number;
}

/** An authorize request the provider accepted, waiting for the person's decision. */
export interface PendingAuthorization {
  clientId: string;
  redirectUri: string;
  state: string | null;
  scopes: string[];
  codeChallenge: string | null;
  codeChallengeMethod: string | null;
  /** Every authorize parameter, for provider rules that depend on more (access_type, owner…). */
  params: URLSearchParams;
}

export interface Grant {
  id: string;
  clientId: string;
  user: MockUser;
  scopes: string[];
  accessToken: string;
  refreshToken: string | null;
  /** ms since epoch; null = never expires. */
  expiresAt: number | null;
  revoked: boolean;
  /** The authorize parameters the grant came from. */
  params: URLSearchParams;
}

export type Body = { format: "form" | "json" | "none"; fields: Record<string, unknown> } | { format: "invalid"; fields: Record<string, never> };

export interface ClientAuth {
  via: "basic" | "post" | "none";
  clientId: string | null;
  /** True when the presented id and secret are this mock's. */
  valid: boolean;
}

export interface MockRoute {
  route: string;
  method: string;
  /** An exact path, or a pattern whose groups are passed to the handler. */
  path: string | RegExp;
  handle(req: MockRequest, mock: MockCore, match: string[]): Response | Promise<Response>;
}

export interface MockRequest {
  method: string;
  url: URL;
  headers: Headers;
  body: string;
}

export interface MockOptions {
  /** The gateway's callback URLs (`<base>/ath/callback`); other redirect URIs are refused. */
  redirectUris: string[];
  /** Lifetime of access tokens in seconds (null: they never expire, like GitHub OAuth apps). */
  accessTokenTtl?: number | null;
  user?: MockUser;
}

export interface MockSpec {
  /** Shown on the consent page. */
  name: string;
  /** Scopes the provider knows. */
  scopes: string[];
  /** The provider's token prefixes, so a leaked one is recognisable as this provider's. */
  tokenPrefix: { access: string; refresh: string };
  defaultAccessTokenTtl: number | null;
  routes: MockRoute[];
}

export class MockCore {
  readonly clientId = `client-${randomString(6)}`;
  readonly clientSecret = `secret-${randomString(18)}`;
  readonly requests: Recorded[] = [];
  readonly grants: Grant[] = [];
  user: MockUser;
  accessTokenTtl: number | null;
  url = "";
  private readonly pending = new Map<string, PendingAuthorization>();
  private readonly codes = new Map<string, { auth: PendingAuthorization; used: boolean; grant?: Grant }>();
  private signingKey: Promise<CryptoKeyPair> | undefined;

  constructor(
    readonly spec: MockSpec,
    readonly options: MockOptions,
  ) {
    this.user = options.user ?? DEFAULT_USER;
    this.accessTokenTtl = options.accessTokenTtl === undefined ? spec.defaultAccessTokenTtl : options.accessTokenTtl;
  }

  /** Requests that reached the handler named `route`. */
  requestsTo(route: string): Recorded[] {
    return this.requests.filter((r) => r.route === route);
  }

  /** 302 to the consent page for an authorize request the provider accepted. */
  consent(auth: PendingAuthorization): Response {
    const ticket = randomString(12);
    this.pending.set(ticket, auth);
    return redirect(`${this.url}/__mock/consent/${ticket}`);
  }

  /** `redirect_uri?error=…&state=…` (RFC 6749 §4.1.2.1). */
  authorizeError(redirectUri: string, state: string | null, error: string, description?: string): Response {
    const u = new URL(redirectUri);
    u.searchParams.set("error", error);
    if (description) u.searchParams.set("error_description", description);
    if (state !== null) u.searchParams.set("state", state);
    return redirect(u.href);
  }

  /** Whether `uri` is one of the registered callbacks. */
  registered(uri: string | null): uri is string {
    return uri !== null && this.options.redirectUris.includes(uri);
  }

  /**
   * Redeems a code once (RFC 6749 §4.1.2: a second use fails and revokes what the first issued). PKCE (RFC 7636
   * §4.6): when the authorize request carried a challenge, the verifier must match it.
   */
  redeem(code: unknown, o: { clientId: string | null; redirectUri: unknown; verifier: unknown }): PendingAuthorization | { error: string; description: string } {
    const entry = typeof code === "string" ? this.codes.get(code) : undefined;
    if (!entry) return { error: "invalid_grant", description: "The code is unknown or expired." };
    if (entry.used) {
      if (entry.grant) entry.grant.revoked = true;
      return { error: "invalid_grant", description: "The code was already used." };
    }
    entry.used = true;
    if (entry.auth.clientId !== o.clientId) return { error: "invalid_grant", description: "The code was issued to another client." };
    if (entry.auth.redirectUri !== o.redirectUri) return { error: "invalid_grant", description: "redirect_uri does not match the authorize request." };
    const { codeChallenge, codeChallengeMethod } = entry.auth;
    if (codeChallenge !== null) {
      if (typeof o.verifier !== "string") return { error: "invalid_grant", description: "code_verifier is missing." };
      const computed = codeChallengeMethod === "S256" ? new Bun.CryptoHasher("sha256").update(o.verifier).digest("base64url") : o.verifier;
      if (computed !== codeChallenge) return { error: "invalid_grant", description: "code_verifier does not match the code_challenge." };
    }
    return entry.auth;
  }

  /** Tokens for a redeemed authorization; `refresh` decides whether a refresh token comes with them. */
  issue(auth: PendingAuthorization, o: { refresh: boolean; scopes?: string[] }): Grant {
    const grant: Grant = {
      id: randomString(8),
      clientId: auth.clientId,
      user: this.user,
      scopes: o.scopes ?? auth.scopes,
      accessToken: this.spec.tokenPrefix.access + randomString(24),
      refreshToken: o.refresh ? this.spec.tokenPrefix.refresh + randomString(24) : null,
      expiresAt: this.accessTokenTtl === null ? null : Date.now() + this.accessTokenTtl * 1000,
      revoked: false,
      params: auth.params,
    };
    this.grants.push(grant);
    for (const c of this.codes.values()) if (c.auth === auth) c.grant = grant;
    return grant;
  }

  /** A new access token for a live refresh token; `rotate` replaces the refresh token too (the old one dies). */
  refresh(refreshToken: unknown, clientId: string | null, o: { rotate: boolean }): Grant | null {
    const grant = this.grants.find((g) => g.refreshToken !== null && g.refreshToken === refreshToken && !g.revoked && g.clientId === clientId);
    if (!grant) return null;
    grant.accessToken = this.spec.tokenPrefix.access + randomString(24);
    grant.expiresAt = this.accessTokenTtl === null ? null : Date.now() + this.accessTokenTtl * 1000;
    if (o.rotate) grant.refreshToken = this.spec.tokenPrefix.refresh + randomString(24);
    return grant;
  }

  /** The live grant whose current access token is the request's bearer token. */
  bearer(headers: Headers): Grant | null {
    const token = /^(?:Bearer|token) (.+)$/i.exec(headers.get("authorization") ?? "")?.[1];
    if (token === undefined) return null;
    const grant = this.grants.find((g) => g.accessToken === token && !g.revoked);
    if (!grant || (grant.expiresAt !== null && grant.expiresAt <= Date.now())) return null;
    return grant;
  }

  /** Revokes the grant holding `token` (access or refresh): both its tokens stop working. */
  revoke(token: unknown): boolean {
    const grant = this.grants.find((g) => !g.revoked && (g.accessToken === token || g.refreshToken === token));
    if (!grant) return false;
    grant.revoked = true;
    return true;
  }

  /** Makes every current access token expired, so the next API call is refused until a refresh. */
  expireAccessTokens(): void {
    for (const g of this.grants) g.expiresAt = Date.now() - 1000;
  }

  /** The request body as the provider would read it, by Content-Type. */
  parseBody(req: MockRequest): Body {
    const type = (req.headers.get("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
    if (req.body === "") return { format: "none", fields: {} };
    if (type === "application/x-www-form-urlencoded") return { format: "form", fields: Object.fromEntries(new URLSearchParams(req.body)) };
    if (type === "application/json") {
      try {
        const v = JSON.parse(req.body) as unknown;
        if (v !== null && typeof v === "object" && !Array.isArray(v)) return { format: "json", fields: v as Record<string, unknown> };
      } catch {
        // reported below as invalid
      }
    }
    return { format: "invalid", fields: {} };
  }

  /** RFC 6749 §2.3.1: HTTP Basic (id and secret form-urlencoded first) or client_id/client_secret in the body. */
  clientAuth(headers: Headers, fields: Record<string, unknown>): ClientAuth {
    const basic = /^Basic (.+)$/i.exec(headers.get("authorization") ?? "")?.[1];
    if (basic !== undefined) {
      const decoded = Buffer.from(basic, "base64").toString("utf8");
      const colon = decoded.indexOf(":");
      const id = decodeURIComponent(decoded.slice(0, colon));
      const secret = decodeURIComponent(decoded.slice(colon + 1));
      return { via: "basic", clientId: id, valid: colon > 0 && id === this.clientId && secret === this.clientSecret };
    }
    if (typeof fields.client_secret === "string") {
      const id = typeof fields.client_id === "string" ? fields.client_id : null;
      return { via: "post", clientId: id, valid: id === this.clientId && fields.client_secret === this.clientSecret };
    }
    return { via: "none", clientId: typeof fields.client_id === "string" ? fields.client_id : null, valid: false };
  }

  /** An OIDC id_token for `grant` (RS256, aud = client id), as Google, Microsoft and GitLab return with `openid`. */
  async idToken(grant: Grant, claims: Record<string, unknown> = {}): Promise<string> {
    this.signingKey ??= generateKeyPair("RS256", { extractable: true }) as Promise<CryptoKeyPair>;
    const { privateKey } = await this.signingKey;
    return new SignJWT({ email: grant.user.email, name: grant.user.name, ...claims })
      .setProtectedHeader({ alg: "RS256", kid: "mock" })
      .setIssuer(this.url)
      .setSubject(grant.user.id)
      .setAudience(grant.clientId)
      .setIssuedAt()
      .setExpirationTime("1h")
      .sign(privateKey);
  }

  /** The signing key's public JWK (a provider's JWKS). */
  async publicJwk(): Promise<JsonWebKey> {
    this.signingKey ??= generateKeyPair("RS256", { extractable: true }) as Promise<CryptoKeyPair>;
    return exportJWK((await this.signingKey).publicKey);
  }

  /** The consent page and its form post (what the person sees at the provider). */
  handleConsent(req: MockRequest, ticket: string): Response {
    const auth = this.pending.get(ticket);
    if (!auth) return new Response("This authorization request has expired.", { status: 400 });
    if (req.method === "GET") return consentPage(this.spec.name, ticket, auth.scopes);
    this.pending.delete(ticket);
    const decision = new URLSearchParams(req.body).get("decision");
    if (decision !== "approve") return this.authorizeError(auth.redirectUri, auth.state, "access_denied", "The person cancelled.");
    const code = randomString(16);
    this.codes.set(code, { auth, used: false });
    const u = new URL(auth.redirectUri);
    u.searchParams.set("code", code);
    if (auth.state !== null) u.searchParams.set("state", auth.state);
    return redirect(u.href);
  }
}

export interface MockProvider {
  core: MockCore;
  /** The providers-file fields that point the template at this mock: its URLs and client credentials. */
  entry: Record<string, string>;
  stop(): Promise<void>;
}

/**
 * Starts the mock's server; every request is recorded with the route that answered it and the status. `entry`
 * maps the mock's base URL to the endpoint fields the template's real URLs are replaced with.
 */
export function serveMock(spec: MockSpec, options: MockOptions, entry: (url: string) => Record<string, string>): MockProvider {
  const core = new MockCore(spec, options);
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(request) {
      const url = new URL(request.url);
      const req: MockRequest = { method: request.method, url, headers: request.headers, body: await request.text() };
      let route = "unknown";
      let response: Response;
      const consent = /^\/__mock\/consent\/([A-Za-z0-9_-]+)$/.exec(url.pathname);
      if (consent) {
        route = "consent";
        response = core.handleConsent(req, consent[1]!);
      } else {
        const hit = findRoute(spec.routes, req);
        if (hit) {
          route = hit.route.route;
          response = await hit.route.handle(req, core, hit.match);
        } else response = new Response("Not Found", { status: 404 });
      }
      core.requests.push({ route, method: req.method, path: url.pathname, query: url.searchParams, headers: request.headers, body: req.body, status: response.status });
      return response;
    },
  });
  core.url = `http://127.0.0.1:${server.port}`;
  return { core, entry: { ...entry(core.url), client_id: core.clientId, client_secret: core.clientSecret }, stop: () => server.stop(true) };
}

/** A 302 to `location`. */
export function redirect(location: string): Response {
  return new Response(null, { status: 302, headers: { location } });
}

/** An HTML error page, as providers show for a request they will not redirect (unknown client, bad redirect_uri). */
export function errorPage(status: number, title: string, detail: string): Response {
  return new Response(`<!doctype html><title>${escapeHtml(title)}</title><h1>${escapeHtml(title)}</h1><p>${escapeHtml(detail)}</p>`, {
    status,
    headers: { "content-type": "text/html; charset=utf-8" },
  });
}

/** The scope parameter of an authorize request split with the provider's separator. */
export function scopesOf(params: URLSearchParams, name: string, separator: " " | ","): string[] {
  return (params.get(name) ?? "").split(separator).map((s) => s.trim()).filter(Boolean);
}

/** The authorize request's common fields. */
export function pendingFrom(params: URLSearchParams, scopes: string[]): PendingAuthorization {
  return {
    clientId: params.get("client_id") ?? "",
    redirectUri: params.get("redirect_uri") ?? "",
    state: params.get("state"),
    scopes,
    codeChallenge: params.get("code_challenge"),
    codeChallengeMethod: params.get("code_challenge") === null ? null : (params.get("code_challenge_method") ?? "plain"),
    params,
  };
}

/** Seconds until the grant's access token expires (RFC 6749 §5.1 `expires_in`), or undefined when it never does. */
export function expiresIn(grant: Grant): number | undefined {
  return grant.expiresAt === null ? undefined : Math.max(0, Math.round((grant.expiresAt - Date.now()) / 1000));
}

// internal

function findRoute(routes: MockRoute[], req: MockRequest): { route: MockRoute; match: string[] } | undefined {
  for (const route of routes) {
    if (route.method !== "*" && route.method !== req.method) continue;
    if (typeof route.path === "string") {
      if (route.path === req.url.pathname) return { route, match: [] };
    } else {
      const m = route.path.exec(req.url.pathname);
      if (m) return { route, match: m.slice(1) };
    }
  }
  return undefined;
}

function consentPage(name: string, ticket: string, scopes: string[]): Response {
  const items = scopes.map((s) => `<li>${escapeHtml(s)}</li>`).join("");
  const html = `<!doctype html><html><head><title>Authorize — ${escapeHtml(name)}</title></head><body>
<h1>${escapeHtml(name)}: authorize the application?</h1><ul>${items}</ul>
<form method="post" action="/__mock/consent/${ticket}">
<button type="submit" name="decision" value="approve">Authorize</button>
<button type="submit" name="decision" value="cancel">Cancel</button>
</form></body></html>`;
  return new Response(html, { headers: { "content-type": "text/html; charset=utf-8" } });
}

function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
