/**
 * POST /oauth/token — MCP clients trade their code for an ATH token bound to (client, person, provider, resource), and
 * rotate refresh tokens (DESIGN §18, rotation as §17: a spent token presented again revokes its family, except a
 * repeat by the same client within 2 s of the rotation — a race, not a theft; another client's → invalid_grant, the
 * family untouched).
 */
import { PREFIX } from "../../protocol/index.ts";
import { MCP_PREFIX } from "../../protocol/mcp-front-door.ts";
import type { McpRefreshRecord } from "../../store/mcp-types.ts";
import type { Call, Gateway } from "../context.ts";
import { constantTimeEqual, hashSecret, mintSecret, randomSecret } from "../crypto/secrets.ts";
import { requireApproved } from "../domain/agents.ts";
import { refreshIdle, refreshTtl } from "../domain/refresh.ts";
import { audit } from "../domain/audit.ts";
import { readText } from "../http/request.ts";
import { s256 } from "../oauth/pkce.ts";
import { intersectScopes } from "../rules/scopes.ts";
import { resolveClient, type ResolvedClient } from "./clients.ts";
import { noStoreJson, OAuthError } from "./errors.ts";

/** A repeat of a just-rotated refresh token by its client within this long is a race, not a reuse (DESIGN §17). */
const RACE_WINDOW_MS = 2000;

export async function token(call: Call): Promise<Response> {
  const { gw, req } = call;
  const type = (req.headers.get("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
  if (type !== "application/x-www-form-urlencoded") throw new OAuthError("invalid_request", "the body must be application/x-www-form-urlencoded");
  const form = new URLSearchParams(await readText(call));
  for (const [name] of form) if (form.getAll(name).length > 1) throw new OAuthError("invalid_request", `the parameter ${name} is repeated`);
  const client = await authenticate(gw, req, form);
  await call.identify({ client_id: client.agentClientId });
  const grantType = form.get("grant_type");
  if (grantType === "authorization_code") return exchangeCode(gw, client, form);
  if (grantType === "refresh_token") return refresh(gw, client, form);
  throw new OAuthError("unsupported_grant_type", "grant_type must be authorization_code or refresh_token");
}

// internal

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
    const id = decodeURIComponent(decoded.slice(0, colon < 0 ? decoded.length : colon));
    if (clientId !== null && clientId !== id) throw new OAuthError("invalid_client", "two different client_ids", 401);
    clientId = id;
    secret = colon < 0 ? "" : decodeURIComponent(decoded.slice(colon + 1));
  }
  if (!clientId) throw new OAuthError("invalid_client", "client_id is required", 401);
  const client = await resolveClient(gw, clientId);
  if (!client) throw new OAuthError("invalid_client", "unknown client", 401, { "www-authenticate": 'Basic realm="ath"' });
  if (client.secretHash !== null && !(secret !== null && constantTimeEqual(hashSecret(secret), client.secretHash))) {
    throw new OAuthError("invalid_client", "client authentication failed", 401, { "www-authenticate": 'Basic realm="ath"' });
  }
  return client;
}

async function exchangeCode(gw: Gateway, client: ResolvedClient, form: URLSearchParams): Promise<Response> {
  const code = form.get("code");
  const verifier = form.get("code_verifier");
  if (!code) throw new OAuthError("invalid_request", "code is required");
  if (!verifier || !/^[A-Za-z0-9._~-]{43,128}$/.test(verifier)) throw new OAuthError("invalid_request", "code_verifier (PKCE) is required");
  // The code is spent by its first presentation, right or wrong (RFC 6749 §4.1.2: used at most once).
  const request = await gw.store.consumeMcpCode(hashSecret(code), gw.now());
  if (!request) throw new OAuthError("invalid_grant", "the code is unknown, used or expired");
  if (request.client_id !== client.clientId) throw new OAuthError("invalid_grant", "the code was issued to another client");
  const redirectUri = form.get("redirect_uri");
  if (redirectUri !== null && redirectUri !== request.redirect_uri) throw new OAuthError("invalid_grant", "redirect_uri differs from the authorization request's");
  if (!constantTimeEqual(s256(verifier), request.code_challenge)) throw new OAuthError("invalid_grant", "code_verifier does not match the code_challenge");
  const resource = form.get("resource");
  if (resource !== null && resource.replace(/\/$/, "") !== request.resource) throw new OAuthError("invalid_target", "resource differs from the authorization request's");

  const now = gw.now();
  const issued = await gw.store.transaction(async (tx) => {
    const agent = await tx.lockAgent(request.agent_client_id);
    if (!agent) throw new OAuthError("invalid_grant", "the client is gone");
    requireApprovedOAuth(gw, agent);
    const session = await tx.consumeSession(request.session_id, request.agent_client_id, now);
    if (!session) throw new OAuthError("invalid_grant", "the authorization was already used or expired");
    const approved = agent.approvals.find((a) => a.provider_id === session.provider_id)?.approved_scopes ?? [];
    const scopes = intersectScopes(approved, session.consented_scopes ?? [], session.requested_scopes);
    if (scopes.length === 0) throw new OAuthError("invalid_scope", "the person granted none of the scopes asked for");
    const minted = await mint(tx, gw, {
      familyId: randomSecret(16),
      client,
      agentClientId: agent.client_id,
      agentId: agent.agent_id,
      userId: session.user_id ?? "unknown",
      providerId: session.provider_id,
      resource: request.resource,
      scopes,
      grantId: session.grant_id,
      // the family lives --refresh-ttl from the consent, each refresh token --refresh-idle unused (as agents', DESIGN §17)
      familyExpires: now + refreshTtl(gw) * 1000,
    });
    return { ...minted, scopes, providerId: session.provider_id, userId: session.user_id };
  });
  await audit(gw, "token.issued", { client_id: request.agent_client_id, provider_id: issued.providerId, user_id: issued.userId, data: { scopes: issued.scopes, mcp_client: client.clientId } });
  return tokenResponse(gw, issued.accessToken, issued.refreshToken, issued.refreshExpiresAt, issued.scopes);
}

async function refresh(gw: Gateway, client: ResolvedClient, form: URLSearchParams): Promise<Response> {
  const presented = form.get("refresh_token");
  if (!presented?.startsWith(MCP_PREFIX.refresh)) throw new OAuthError("invalid_grant", "unknown refresh token");
  const hash = hashSecret(presented);
  const now = gw.now();
  const found = await gw.store.getMcpRefresh(hash);
  if (!found) throw new OAuthError("invalid_grant", "unknown refresh token");
  // Another client presenting it learns nothing and changes nothing (DESIGN §18).
  if (found.client_id !== client.clientId) throw new OAuthError("invalid_grant", "unknown refresh token");
  if (found.status === "revoked") throw new OAuthError("invalid_grant", "the refresh token was revoked");
  if (found.status === "spent") {
    if (found.spent_at !== null && now - found.spent_at <= RACE_WINDOW_MS) throw new OAuthError("invalid_grant", "the refresh token was just rotated");
    await revokeFamily(gw, found, "refresh.reuse_detected");
    throw new OAuthError("invalid_grant", "the refresh token was already used: its whole family is revoked");
  }
  if (found.expires_at <= now) throw new OAuthError("invalid_grant", "the refresh token expired");
  const asked = (form.get("scope") ?? "").split(" ").filter(Boolean);
  const wider = asked.filter((s) => !found.scopes.includes(s));
  if (wider.length) throw new OAuthError("invalid_scope", `a refresh cannot widen the scopes: ${wider.join(" ")}`);
  const grant = found.grant_id ? await gw.store.getGrant(found.grant_id) : null;
  if (!grant || grant.status !== "live") {
    await revokeFamily(gw, found, "refresh.grant_gone");
    throw new OAuthError("invalid_grant", "the person's upstream grant is gone: authorize again");
  }

  const issued = await gw.store.transaction(async (tx) => {
    const agent = await tx.lockAgent(found.agent_client_id);
    if (!agent) throw new OAuthError("invalid_grant", "the client is gone");
    requireApprovedOAuth(gw, agent);
    const spent = await tx.spendMcpRefresh(hash, now);
    if (!spent) throw new OAuthError("invalid_grant", "the refresh token was just rotated");
    const approved = agent.approvals.find((a) => a.provider_id === spent.provider_id)?.approved_scopes ?? [];
    const scopes = intersectScopes(approved, spent.scopes, asked.length ? asked : spent.scopes);
    if (scopes.length === 0) throw new OAuthError("invalid_scope", "no scope of this family is still approved");
    const minted = await mint(tx, gw, {
      familyId: spent.family_id,
      client,
      agentClientId: spent.agent_client_id,
      agentId: spent.agent_id,
      userId: spent.user_id,
      providerId: spent.provider_id,
      resource: spent.resource,
      scopes,
      grantId: spent.grant_id,
      familyExpires: spent.family_expires_at,
    });
    return { ...minted, scopes };
  });
  await audit(gw, "token.refreshed", { client_id: found.agent_client_id, provider_id: found.provider_id, user_id: found.user_id, data: { scopes: issued.scopes } });
  return tokenResponse(gw, issued.accessToken, issued.refreshToken, issued.refreshExpiresAt, issued.scopes);
}

interface MintInput {
  familyId: string;
  client: ResolvedClient;
  agentClientId: string;
  agentId: string;
  userId: string;
  providerId: string;
  resource: string;
  scopes: string[];
  grantId: string | null;
  familyExpires: number;
}

async function mint(tx: Gateway["store"], gw: Gateway, o: MintInput): Promise<{ accessToken: string; refreshToken: string; refreshExpiresAt: number }> {
  const now = gw.now();
  const accessToken = mintSecret(PREFIX.token);
  const refreshToken = mintSecret(MCP_PREFIX.refresh);
  await tx.createToken({
    token_hash: hashSecret(accessToken),
    token_id: mintSecret(PREFIX.tokenId, 16),
    client_id: o.agentClientId,
    agent_id: o.agentId,
    user_id: o.userId,
    provider_id: o.providerId,
    scopes: o.scopes,
    grant_id: o.grantId,
    created_at: now,
    expires_at: now + gw.opts.tokenTtlSeconds * 1000,
    revoked_at: null,
  });
  const record: McpRefreshRecord = {
    refresh_hash: hashSecret(refreshToken),
    family_id: o.familyId,
    client_id: o.client.clientId,
    agent_client_id: o.agentClientId,
    agent_id: o.agentId,
    user_id: o.userId,
    provider_id: o.providerId,
    resource: o.resource,
    scopes: o.scopes,
    grant_id: o.grantId,
    access_token_hash: hashSecret(accessToken),
    status: "live",
    spent_at: null,
    created_at: now,
    expires_at: Math.min(o.familyExpires, now + refreshIdle(gw) * 1000),
    family_expires_at: o.familyExpires,
  };
  await tx.createMcpRefresh(record);
  return { accessToken, refreshToken, refreshExpiresAt: record.expires_at };
}

function tokenResponse(gw: Gateway, accessToken: string, refreshToken: string, refreshExpiresAt: number, scopes: string[]): Response {
  return noStoreJson({
    access_token: accessToken,
    token_type: "Bearer",
    expires_in: gw.opts.tokenTtlSeconds,
    refresh_token: refreshToken,
    // ath's extension, as for agents (DESIGN §17): the earlier of --refresh-idle and the family's --refresh-ttl
    refresh_expires_in: Math.max(0, Math.floor((refreshExpiresAt - gw.now()) / 1000)),
    scope: scopes.join(" "),
  });
}

/** Every refresh and access token of the family revoked, audited once. */
async function revokeFamily(gw: Gateway, r: McpRefreshRecord, event: string): Promise<void> {
  const family = await gw.store.revokeMcpFamily(r.family_id);
  const hashes = new Set(family.map((f) => f.access_token_hash));
  for (const h of hashes) {
    const t = await gw.store.revokeToken(h, gw.now());
    if (t) await audit(gw, "token.revoked", { client_id: t.client_id, provider_id: t.provider_id, user_id: t.user_id, data: { by: "gateway", reason: event } });
  }
  await audit(gw, event, { client_id: r.agent_client_id, provider_id: r.provider_id, user_id: r.user_id, data: { family_size: family.length } });
}

function requireApprovedOAuth(gw: Gateway, agent: Parameters<typeof requireApproved>[1]): void {
  try {
    requireApproved(gw, agent);
  } catch {
    throw new OAuthError("invalid_grant", "an administrator suspended this client");
  }
}
