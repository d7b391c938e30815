/**
 * POST /ath/revoke — 200 `{}` whatever happens (no existence leak, spec §7). It acts only for the token's owning
 * client (client_id + client_secret) or the admin token; the audit log records why nothing happened otherwise.
 */
import { TokenRevocationRequest } from "../../protocol/index.ts";
import { isAdmin } from "../admin/auth.ts";
import { authenticateClient } from "../domain/agents.ts";
import { audit } from "../domain/audit.ts";
import type { Call } from "../context.ts";
import { findToken, revokeToken } from "../domain/tokens.ts";
import { isLimitError, readObject } from "../http/request.ts";
import { json } from "../http/response.ts";

export async function revoke(call: Call): Promise<Response> {
  const { gw } = call;
  let outcome: string;
  try {
    outcome = await tryRevoke(call);
  } catch (err) {
    if (isLimitError(err)) throw err;
    outcome = `refused: ${err instanceof Error ? err.message : String(err)}`;
  }
  if (outcome !== "revoked") await audit(gw, "token.revocation_ignored", { data: { reason: outcome } });
  return json({});
}

// internal

async function tryRevoke(call: Call): Promise<string> {
  const { gw, req } = call;
  const parsed = TokenRevocationRequest.safeParse(await readObject(call, { form: true }));
  if (!parsed.success) return "malformed request";
  const body = parsed.data;
  const token = await findToken(gw, body.token);
  const admin = isAdmin(gw, req);
  if (!admin) {
    if (!body.client_id || !body.client_secret) return "no client credentials";
    const agent = await authenticateClient(gw, body.client_id, body.client_secret);
    if (!token || token.client_id !== agent.client_id) return "token unknown or owned by another client";
  }
  if (!token) return "token unknown";
  await revokeToken(gw, token, admin ? "admin" : "client");
  return "revoked";
}
