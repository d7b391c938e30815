/**
 * Requests to an ATH gateway (or a native ATH service, which serves the same /ath/* paths): discovery, register,
 * authorize, token, revoke and proxy. Every answer is parsed with the protocol schema.
 */
import { PATHS } from "../protocol/constants.ts";
import {
  AgentRegistrationResponse,
  AgentStatusResponse,
  AuthorizationResponse,
  DiscoveryDocument,
  ServiceDiscoveryDocument,
  TokenResponse,
  type AgentRegistrationRequest,
  type AuthorizationRequest,
  RegistrationUpdateResponse,
  type RegistrationUpdateRequest,
  type RefreshTokenRequest,
  type TokenExchangeRequest,
  type DelegationRequest,
  type JwtBearerRequest,
} from "../protocol/schemas.ts";
import { signDpopProof } from "./dpop.ts";
import type { AgentKey } from "./keys.ts";
import { z } from "zod";
import { ClientError } from "./errors.ts";
import { requestJson, send, type HttpOptions } from "./http.ts";

/** Fetches GET /.well-known/ath.json. */
export function discoverGateway(base: string, http: HttpOptions): Promise<DiscoveryDocument> {
  return requestJson(DiscoveryDocument, { method: "GET", url: base + PATHS.discovery }, http);
}

/** Fetches GET /.well-known/ath-app.json of a native service. */
export function discoverService(base: string, http: HttpOptions): Promise<ServiceDiscoveryDocument> {
  return requestJson(ServiceDiscoveryDocument, { method: "GET", url: base + PATHS.appDiscovery }, http);
}

export function registerAgent(base: string, body: AgentRegistrationRequest, http: HttpOptions) {
  return attested(base, requestJson(AgentRegistrationResponse, { method: "POST", url: base + PATHS.register, json: body }, http));
}

/** GET /ath/agents/status (ath's extension): the registration as the gateway holds it now. */
export function fetchAgentStatus(base: string, client: { client_id: string; client_secret: string }, http: HttpOptions) {
  const basic = btoa(`${encodeURIComponent(client.client_id)}:${encodeURIComponent(client.client_secret)}`);
  return requestJson(AgentStatusResponse, { method: "GET", url: base + PATHS.agentStatus, headers: { authorization: `Basic ${basic}` } }, http);
}

/** PATCH /ath/agents/registration (ath's extension, DESIGN §17): asks for more providers and scopes. */
export function updateRegistration(base: string, client: { client_id: string; client_secret: string }, body: RegistrationUpdateRequest, http: HttpOptions) {
  const basic = btoa(`${encodeURIComponent(client.client_id)}:${encodeURIComponent(client.client_secret)}`);
  return requestJson(RegistrationUpdateResponse, { method: "PATCH", url: base + PATHS.agentRegistration, json: body, headers: { authorization: `Basic ${basic}` } }, http);
}

export function startAuthorization(base: string, body: AuthorizationRequest, http: HttpOptions) {
  return attested(base, requestJson(AuthorizationResponse, { method: "POST", url: base + PATHS.authorize, json: body }, http));
}

/** POST /ath/token as JSON: every known ATH server parses JSON (the official SDK's gateway does not parse forms); `ath serve` takes both (DESIGN §8). */
export async function exchangeCode(base: string, body: TokenExchangeRequest | RefreshTokenRequest, http: HttpOptions, key?: AgentKey) {
  const url = base + PATHS.token;
  // DESIGN §17: a DPoP proof by the agent's key with every token request (no `ath`); gateways without DPoP ignore it.
  const headers = key === undefined ? undefined : { dpop: await signDpopProof(key, { method: "POST", url }) };
  return attested(base, requestJson(TokenResponse, { method: "POST", url, json: body, ...(headers ? { headers } : {}) }, http));
}

/**
 * POST /ath/token for one of DESIGN §23's grants — a delegation (RFC 8693) or an ID-JAG (RFC 7523) — as JSON, with a
 * DPoP proof by the agent's key as every token request.
 */
export async function grantAt(base: string, body: DelegationRequest | JwtBearerRequest, http: HttpOptions, key: AgentKey) {
  const url = base + PATHS.token;
  const headers = { dpop: await signDpopProof(key, { method: "POST", url }) };
  return attested(base, requestJson(TokenResponse, { method: "POST", url, json: body, headers }, http));
}

/** POST /ath/revoke as JSON (as /ath/token: DESIGN §8); the gateway answers 200 `{}` whatever happened. */
export function revokeToken(
  base: string,
  body: { token: string; client_id: string; client_secret: string },
  http: HttpOptions,
): Promise<Record<string, unknown>> {
  return requestJson(z.record(z.string(), z.unknown()), { method: "POST", url: base + PATHS.revoke, json: body }, http);
}

/** The attestation audience of an endpoint: the base URL, or `${base}/ath/token` for the token endpoint. */
export function audience(base: string, endpoint: "register" | "authorize" | "token"): string {
  return endpoint === "token" ? base + PATHS.token : base;
}

/** The proxy URL of `path` (which may carry a query) for a provider, or the native API base. */
export function proxyUrl(target: { base: string; apiBase?: string }, provider: string, path: string): string {
  const rel = path.startsWith("/") ? path.slice(1) : path;
  if (target.apiBase !== undefined) return `${target.apiBase.replace(/\/+$/, "")}/${rel}`;
  return `${target.base}${PATHS.proxy}/${encodeURIComponent(provider)}/${rel}`;
}

/**
 * The headers that present a saved token on a request (`method`, `url`): a DPoP-bound token (RFC 9449) as
 * `Authorization: DPoP` with a fresh proof of that request by `key` (the URL's query is no part of it); a bearer
 * token as `Bearer`.
 */
export async function tokenAuthorization(method: string, url: string, token: string, tokenType: string | undefined, key: AgentKey | undefined): Promise<Record<string, string>> {
  if (tokenType?.toLowerCase() === "dpop" && key !== undefined) {
    return { authorization: `DPoP ${token}`, dpop: await signDpopProof(key, { method, url, accessToken: token }) };
  }
  return { authorization: `Bearer ${token}` };
}

/**
 * Sends a proxied request; the answer (any status) is returned for the caller to relay. A DPoP-bound token (RFC 9449)
 * goes as `Authorization: DPoP` with a fresh proof of this request by `dpopKey`; a bearer token as `Bearer`.
 */
export async function callProxy(
  url: string,
  o: { method: string; token: string; tokenType?: string; dpopKey?: AgentKey; agentId: string; headers: Record<string, string>; body?: string },
  http: HttpOptions,
): Promise<Response> {
  const auth = await tokenAuthorization(o.method, url, o.token, o.tokenType, o.dpopKey);
  return send(
    {
      method: o.method,
      url,
      headers: { ...o.headers, ...auth, "x-ath-agent-id": o.agentId },
      ...(o.body === undefined ? {} : { body: o.body }),
    },
    http,
  );
}

// internal

/**
 * A call that carries an attestation: when the gateway refuses its `aud` because it serves under another name
 * (`-g http://localhost:8787` for a gateway whose base URL is http://127.0.0.1:8787), the refusal names the base URL
 * to pass instead (details.gateway_base_url).
 */
async function attested<T>(base: string, call: Promise<T>): Promise<T> {
  try {
    return await call;
  } catch (e) {
    if (!(e instanceof ClientError) || e.code !== "INVALID_ATTESTATION") throw e;
    const expected = /aud does not match (https?:\/\/\S+)/.exec(e.message)?.[1]?.replace(/[.,;]+$/, "");
    const theirs = expected?.endsWith(PATHS.token) ? expected.slice(0, -PATHS.token.length) : expected;
    if (theirs === undefined || theirs === base) throw e;
    throw new ClientError(e.kind, e.code, `${e.message}: this gateway's base URL is ${theirs}, not ${base}: pass -g ${theirs}`, {
      ...(e.status === undefined ? {} : { status: e.status }),
      details: { ...e.details, gateway_base_url: theirs },
      cause: e,
    });
  }
}
