/**
 * A provider for in-process gateway tests (tests/helpers/in-process.ts), reached through the harness's network, whose
 * answers a test sets: an OAuth 2.0 authorization server (authorization code with PKCE S256, client_secret_post or
 * _basic, rotating refresh tokens, RFC 7009 revocation) and an API under /api that accepts only live access tokens and
 * records every request it gets. Its authorize endpoint answers at once (no sign-in page); `grantedScope` and
 * `refuseRefresh` script what its token endpoint grants.
 */
import { s256 } from "../../src/gateway/oauth/pkce.ts";
import type { ProviderConfigInput } from "../../src/protocol/index.ts";

/** One request the API received. */
export interface ApiRequest {
  method: string;
  /** Path under the API root (`/api` stripped), as sent. */
  path: string;
  query: string;
  headers: Record<string, string>;
  body: string;
  /** The bearer token it carried, and whether it was live then. */
  bearer: string | null;
  active: boolean;
}

export type ApiRoute = (req: Request, seen: ApiRequest) => Response | Promise<Response>;

export class ScriptedProvider {
  /** The scope the token endpoint grants: `undefined` echoes the requested scope, `null` leaves `scope` out. */
  grantedScope: string | null | undefined = undefined;
  /** Refresh requests are refused with invalid_grant (the person revoked the grant at the provider). */
  refuseRefresh = false;
  /** What the revocation endpoint answers (RFC 7009 §2.2: 200 revoked, 503 try later); it revokes only on 200. */
  revocationStatus = 200;
  /** The forms POSTed to the token endpoint (client credentials included: test memory only). */
  readonly tokenRequests: Record<string, string>[] = [];
  /** The forms POSTed to the revocation endpoint, with the Authorization header they came with. */
  readonly revocations: { form: Record<string, string>; authorization: string | null }[] = [];
  /** The query of each authorization request. */
  readonly authorizeRequests: URLSearchParams[] = [];
  readonly api: ApiRequest[] = [];
  /** API answers by path (under /api); any other path echoes the request as JSON. */
  readonly routes = new Map<string, ApiRoute>();

  readonly clientId = "gateway-client";
  readonly clientSecret = "gateway-client-secret";
  #codes = new Map<string, { scope: string; challenge: string; redirectUri: string }>();
  #access = new Set<string>();
  #refresh = new Map<string, string>();
  #issued = 0;

  constructor(readonly origin = "http://provider.test") {}

  /** A provider entry for this server; `over` adds or replaces fields. */
  config(over: Partial<ProviderConfigInput> = {}): ProviderConfigInput {
    return {
      display_name: "Scripted Mail",
      available_scopes: ["mail:read", "mail:send"],
      authorize_endpoint: `${this.origin}/authorize`,
      token_endpoint: `${this.origin}/token`,
      revocation_endpoint: `${this.origin}/revoke`,
      api_base_url: `${this.origin}/api`,
      client_id: this.clientId,
      client_secret: this.clientSecret,
      ...over,
    };
  }

  /** Every access token issued so far stops working at the API (as if it had expired there). */
  expireAccessTokens(): void {
    this.#access.clear();
  }

  /** Requests to the API whose path starts with `prefix`. */
  to(prefix: string): ApiRequest[] {
    return this.api.filter((r) => r.path.startsWith(prefix));
  }

  /** Token-endpoint requests of one grant type. */
  grants(type: "authorization_code" | "refresh_token"): Record<string, string>[] {
    return this.tokenRequests.filter((f) => f.grant_type === type);
  }

  readonly fetch = async (req: Request): Promise<Response> => {
    const url = new URL(req.url);
    if (url.pathname === "/authorize" && req.method === "GET") return this.#authorize(url);
    if (url.pathname === "/token" && req.method === "POST") return this.#token(req);
    if (url.pathname === "/revoke" && req.method === "POST") {
      const form = Object.fromEntries(new URLSearchParams(await req.text()));
      this.revocations.push({ form, authorization: req.headers.get("authorization") });
      if (this.revocationStatus !== 200) return new Response("try later", { status: this.revocationStatus, headers: { "retry-after": "30" } });
      this.#access.delete(form.token ?? "");
      this.#refresh.delete(form.token ?? "");
      return new Response(null, { status: 200 });
    }
    if (url.pathname === "/api" || url.pathname.startsWith("/api/")) return this.#api(req, url);
    return Response.json({ error: "not_found" }, { status: 404 });
  };

  // internal

  #authorize(url: URL): Response {
    this.authorizeRequests.push(url.searchParams);
    const q = url.searchParams;
    const back = new URL(q.get("redirect_uri") ?? "");
    if (q.get("client_id") !== this.clientId || q.get("code_challenge_method") !== "S256" || !q.get("code_challenge")) {
      back.searchParams.set("error", "invalid_request");
    } else {
      const code = `code-${++this.#issued}`;
      this.#codes.set(code, { scope: q.get("scope") ?? "", challenge: q.get("code_challenge")!, redirectUri: back.href });
      back.searchParams.set("code", code);
    }
    back.searchParams.set("state", q.get("state") ?? "");
    return new Response(null, { status: 302, headers: { location: back.href } });
  }

  async #token(req: Request): Promise<Response> {
    const form = Object.fromEntries(new URLSearchParams(await req.text()));
    this.tokenRequests.push(form);
    const basic = /^Basic (.+)$/.exec(req.headers.get("authorization") ?? "")?.[1];
    const [id, secret] = basic ? atob(basic).split(":").map(decodeURIComponent) : [form.client_id, form.client_secret];
    if (id !== this.clientId || secret !== this.clientSecret) return Response.json({ error: "invalid_client" }, { status: 401 });
    const refused = () => Response.json({ error: "invalid_grant" }, { status: 400 });
    if (form.grant_type === "authorization_code") {
      const code = this.#codes.get(form.code ?? "");
      this.#codes.delete(form.code ?? "");
      if (!code || code.redirectUri !== form.redirect_uri || s256(form.code_verifier ?? "") !== code.challenge) return refused();
      return this.#issue(code.scope);
    }
    if (form.grant_type === "refresh_token") {
      const scope = this.#refresh.get(form.refresh_token ?? "");
      this.#refresh.delete(form.refresh_token ?? "");
      if (scope === undefined || this.refuseRefresh) return refused();
      return this.#issue(scope);
    }
    return Response.json({ error: "unsupported_grant_type" }, { status: 400 });
  }

  #issue(requested: string): Response {
    const n = ++this.#issued;
    const access = `upstream-access-${n}-${crypto.randomUUID()}`;
    const refresh = `upstream-refresh-${n}-${crypto.randomUUID()}`;
    this.#access.add(access);
    this.#refresh.set(refresh, requested);
    const scope = this.grantedScope === undefined ? { scope: requested } : this.grantedScope === null ? {} : { scope: this.grantedScope };
    return Response.json({ access_token: access, token_type: "Bearer", expires_in: 3600, refresh_token: refresh, ...scope });
  }

  async #api(req: Request, url: URL): Promise<Response> {
    const bearer = /^Bearer (.+)$/.exec(req.headers.get("authorization") ?? "")?.[1] ?? null;
    const seen: ApiRequest = {
      method: req.method,
      path: url.pathname.slice("/api".length) || "/",
      query: url.search,
      headers: Object.fromEntries(req.headers),
      body: await req.text(),
      bearer,
      active: bearer !== null && this.#access.has(bearer),
    };
    this.api.push(seen);
    if (!seen.active) return Response.json({ error: "invalid_token" }, { status: 401, headers: { "www-authenticate": 'Bearer error="invalid_token"' } });
    const route = this.routes.get(seen.path);
    if (route) return route(req, seen);
    return Response.json({ method: seen.method, path: seen.path, query: seen.query, body: seen.body }, { headers: { "x-upstream": "scripted" } });
  }
}
