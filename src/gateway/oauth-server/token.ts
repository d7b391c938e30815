/**
 * POST /oauth/token — the OAuth wire of MCP clients' tokens (DESIGN §18): the form parsed, the client authenticated,
 * then the domain decides — domain/mcp-codes.ts for `authorization_code`, domain/refresh.ts for `refresh_token` (the
 * agents' rotation: one race window, one kill rule), domain/id-jag.ts for an enterprise IdP's ID-JAG (§23, RFC 7523
 * `jwt-bearer`: no browser) — and its answer or refusal is shaped as OAuth's (RFC 6749 §5.1, §5.2), not ATH's. MCP refresh tokens keep the `ath_rt_` prefix: one aggregate, one prefix; the row, not the prefix,
 * says whose a token is.
 */
import { AthError, GRANT_TYPES, type TokenResponse } from "../../protocol/index.ts";
import type { Call, Gateway } from "../context.ts";
import { constantTimeEqual, hashSecret } from "../crypto/secrets.ts";
import { exchangeMcpCode } from "../domain/mcp-codes.ts";
import { rotateRefreshToken } from "../domain/refresh.ts";
import { readText } from "../http/request.ts";
import { redirectHost, resolveClient, type ResolvedClient } from "./clients.ts";
import { requireResource, tokenForPerson, verifyIdJag } from "../domain/id-jag.ts";
import { agentFor } from "../domain/mcp-clients.ts";
import { providerForResource, resourceOf } from "../mcp/providers.ts";
import { noStoreJson, OAuthError } from "./errors.ts";

export async function token(call: Call): Promise<Response> {
  const { gw, req } = call;
  const type = (req.headers.get("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
  if (type !== "application/x-www-form-urlencoded") throw new OAuthError("invalid_request", "the body must be application/x-www-form-urlencoded");
  const form = new URLSearchParams(await readText(call));
  for (const [name] of form) if (form.getAll(name).length > 1) throw new OAuthError("invalid_request", `the parameter ${name} is repeated`);
  const client = await authenticate(gw, req, form);
  await call.identify({ client_id: client.agentClientId });
  const grantType = form.get("grant_type");
  if (grantType !== "authorization_code" && grantType !== "refresh_token" && grantType !== GRANT_TYPES.jwtBearer) {
    throw new OAuthError("unsupported_grant_type", `grant_type must be authorization_code, refresh_token or ${GRANT_TYPES.jwtBearer}`);
  }
  let issued: TokenResponse;
  try {
    if (grantType === GRANT_TYPES.jwtBearer) issued = await idJag(gw, client, form);
    else issued = grantType === "authorization_code" ? await exchangeMcpCode(gw, codeExchange(client, form)) : await rotateRefreshToken(gw, refreshRequest(client, form));
  } catch (err) {
    throw (err instanceof AthError && asOAuthError(err)) || err;
  }
  await call.identify({ provider_id: issued.provider_id });
  return noStoreJson({
    access_token: issued.access_token,
    token_type: issued.token_type,
    expires_in: issued.expires_in,
    refresh_token: issued.refresh_token,
    // ath's extension, as for agents (DESIGN §17): the earlier of --refresh-idle and the family's --refresh-ttl
    refresh_expires_in: issued.refresh_expires_in,
    scope: issued.effective_scopes.join(" "),
  });
}

/**
 * The OAuth error for a refusal of the domain (RFC 6749 §5.2), or null for an error that is no refusal (a store
 * outage stays a 503). Precise reasons go to the audit trail; the description says what the client can act on.
 */
export function asOAuthError(err: AthError): OAuthError | null {
  const reason = typeof err.details?.reason === "string" ? err.details.reason : undefined;
  switch (err.code) {
    case "INVALID_GRANT":
      if (reason === "refresh_token_revoked" && err.details?.upstream) return new OAuthError("invalid_grant", "the person's upstream grant is gone: authorize again");
      return new OAuthError("invalid_grant", (reason && GRANT_REASONS[reason]) ?? err.message);
    case "INVALID_CLIENT":
      return new OAuthError("invalid_grant", "the client is gone");
    case "AGENT_UNAPPROVED":
      return new OAuthError("invalid_grant", "an administrator suspended this client");
    case "SCOPE_NOT_APPROVED":
      return new OAuthError("invalid_scope", err.message);
    case "PROVIDER_NOT_APPROVED":
      return new OAuthError("invalid_target", err.message);
    // DESIGN §23 "Pinned": a 400 (RFC 6749 §5.2) with the URL the person opens once beside `error`
    case "CONSENT_REQUIRED":
      return new OAuthError("interaction_required", err.message, 400, {}, { consent_url: String(err.details?.consent_url) });
    case "INVALID_REQUEST":
      if (reason === "scope_widening") return new OAuthError("invalid_scope", `a refresh cannot widen the scopes: ${String((err.details?.scopes as string[] | undefined)?.join(" "))}`);
      if (reason === "resource_mismatch") return new OAuthError("invalid_target", err.message);
      return new OAuthError("invalid_request", err.message);
    default:
      return null;
  }
}

// internal

/** What each refusal of a refresh token tells an MCP client (the agents' wording names `ath authorize`). */
const GRANT_REASONS: Record<string, string> = {
  refresh_token_reused: "the refresh token was already used: its whole family is revoked",
  refresh_token_revoked: "the refresh token was revoked",
  refresh_token_expired: "the refresh token expired",
  refresh_token_spent: "the refresh token was just rotated",
};

/** The client: its secret (post or basic) when it registered as confidential, else its client_id alone (PKCE binds it). */
async function authenticate(gw: Gateway, req: Request, form: URLSearchParams): Promise<ResolvedClient> {
  let clientId = form.get("client_id");
  let secret = form.get("client_secret");
  const basic = /^Basic\s+(\S+)$/i.exec(req.headers.get("authorization") ?? "");
  if (basic) {
    let decoded: string;
    try {
      decoded = atob(basic[1]!);
    } catch {
      throw new OAuthError("invalid_client", "malformed Basic credentials", 401);
    }
    const colon = decoded.indexOf(":");
    let id: string;
    try {
      id = decodeURIComponent(decoded.slice(0, colon < 0 ? decoded.length : colon));
      secret = colon < 0 ? "" : decodeURIComponent(decoded.slice(colon + 1));
    } catch {
      throw new OAuthError("invalid_client", "malformed Basic credentials", 401);
    }
    if (clientId !== null && clientId !== id) throw new OAuthError("invalid_client", "two different client_ids", 401);
    clientId = id;
  }
  if (!clientId) throw new OAuthError("invalid_client", "client_id is required", 401);
  const client = await resolveClient(gw, clientId);
  if (!client) throw new OAuthError("invalid_client", "unknown client", 401, { "www-authenticate": 'Basic realm="ath"' });
  if (client.secretHash !== null && !(secret !== null && constantTimeEqual(hashSecret(secret), client.secretHash))) {
    throw new OAuthError("invalid_client", "client authentication failed", 401, { "www-authenticate": 'Basic realm="ath"' });
  }
  return client;
}

function codeExchange(client: ResolvedClient, form: URLSearchParams) {
  const code = form.get("code");
  const verifier = form.get("code_verifier");
  if (!code) throw new OAuthError("invalid_request", "code is required");
  if (!verifier || !/^[A-Za-z0-9._~-]{43,128}$/.test(verifier)) throw new OAuthError("invalid_request", "code_verifier (PKCE) is required");
  return { clientId: client.clientId, code, verifier, redirectUri: form.get("redirect_uri"), resource: form.get("resource") };
}

/**
 * DESIGN §23: an enterprise IdP's ID-JAG for the MCP resource it names — a client that registered the grant type
 * (RFC 7591 `grant_types`), the assertion issued to it, the resource one of this gateway's MCP servers (and the one
 * the request names, if it names one); the client's agent record is the one its authorizations use.
 */
async function idJag(gw: Gateway, client: ResolvedClient, form: URLSearchParams): Promise<TokenResponse> {
  const assertion = form.get("assertion");
  if (!assertion) throw new OAuthError("invalid_request", "assertion is required");
  if (!client.metadata.grant_types.includes(GRANT_TYPES.jwtBearer)) {
    throw new OAuthError("unauthorized_client", `this client did not register the ${GRANT_TYPES.jwtBearer} grant type`);
  }
  const verified = await verifyIdJag(gw, assertion, client.clientId);
  const provider = await providerForResource(gw, verified.resource);
  if (!provider) throw new OAuthError("invalid_target", "the assertion's resource is no MCP server of this gateway");
  const resource = resourceOf(gw, provider.provider_id);
  const asked = form.get("resource");
  if (asked !== null && asked.replace(/\/$/, "") !== resource) throw new OAuthError("invalid_target", "resource differs from the assertion's");
  requireResource(verified, resource);
  const agent = await agentFor(gw, { ...client, redirectHost: redirectHost(client.metadata) }, provider.provider_id, provider.config.available_scopes);
  const scopes = (form.get("scope") ?? "").split(" ").filter(Boolean);
  return tokenForPerson(gw, verified, { agent, provider, scopes: scopes.length > 0 ? scopes : undefined, jkt: null, mcpClient: client.clientId });
}

function refreshRequest(client: ResolvedClient, form: URLSearchParams) {
  const presented = form.get("refresh_token");
  if (!presented) throw new OAuthError("invalid_request", "refresh_token is required");
  // RFC 6749 §6: `scope` may narrow; empty or absent keeps the family's.
  const asked = (form.get("scope") ?? "").split(" ").filter(Boolean);
  return {
    agent: { client_id: client.agentClientId },
    mcp: { oauth_client_id: client.clientId, resource: form.get("resource") },
    presented,
    scopes: asked.length > 0 ? asked : undefined,
    jkt: null,
  };
}
