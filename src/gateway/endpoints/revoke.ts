/**
 * POST /ath/revoke — 200 `{}` whether or not there was such a token (no existence leak, spec §7), but only once what
 * it did is durable: a store that fails answers 503 SERVICE_UNAVAILABLE (RFC 7009 §2.2.1; DESIGN §14), never a 200
 * for a revocation that did not happen. It acts only for the token's owning client (client_id + client_secret) or the
 * admin token. The audit log records why a *known* token was not revoked; a request naming no known token leaves no
 * row (anyone can send them, and the log must not grow with them).
 */
import { AthError, PREFIX, TokenRevocationRequest } from "../../protocol/index.ts";
import { sentAdminToken } from "../domain/admin-token.ts";
import { authenticateClient } from "../domain/agents.ts";
import { audit } from "../domain/audit.ts";
import type { Call } from "../context.ts";
import { findRefreshToken, findToken, revokeRefreshFamily, revokeToken } from "../domain/tokens.ts";
import { isLimitError, readObject } from "../http/request.ts";
import { json } from "../http/response.ts";

export async function revoke(call: Call): Promise<Response> {
  const { gw } = call;
  const outcome = await tryRevoke(call);
  if (outcome !== null) await audit(gw, "token.revocation_ignored", { client_id: outcome.clientId, data: { reason: outcome.reason } });
  return json({});
}

// internal

/** Revokes; returns why a known token was left alone, or null (revoked, or no known token named). */
async function tryRevoke(call: Call): Promise<{ reason: string; clientId: string } | null> {
  const { gw, req } = call;
  let raw: Record<string, unknown>;
  try {
    raw = await readObject(call, { form: true });
  } catch (err) {
    // a body over --max-body or nested too deep is refused as everywhere (413 / 400, DESIGN §10)
    if (isLimitError(err)) throw err;
    if (err instanceof AthError) return null; // unreadable: no token named
    throw err;
  }
  const parsed = TokenRevocationRequest.safeParse(raw);
  if (!parsed.success) return null;
  const body = parsed.data;
  // A refresh token (DESIGN §17) names its family; an access token, itself and its family.
  const token = body.token.startsWith(PREFIX.refreshToken) ? await findRefreshToken(gw, body.token) : await findToken(gw, body.token);
  if (!token) return null;
  const admin = sentAdminToken(gw, req);
  if (!admin) {
    const ignored = (reason: string) => ({ reason, clientId: token.client_id });
    if (!body.client_id || !body.client_secret) return ignored("no client credentials");
    let agentClientId: string;
    try {
      agentClientId = (await authenticateClient(gw, body.client_id, body.client_secret)).client_id;
    } catch (err) {
      if (err instanceof AthError) return ignored("client authentication failed");
      throw err;
    }
    if (token.client_id !== agentClientId) return ignored("token owned by another client");
  }
  if ("refresh_hash" in token) await revokeRefreshFamily(gw, token, admin ? "admin" : "client");
  else await revokeToken(gw, token, admin ? "admin" : "client");
  return null;
}
