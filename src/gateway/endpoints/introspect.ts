/**
 * POST /ath/introspect — RFC 7662 token introspection, so a service's own API can check ATH tokens without a proxy
 * hop. Callers present the introspection token or the admin token (the route's guard). A live token is described;
 * anything else — unknown, expired, revoked, its agent no longer approved, or its upstream grant dead (the provider
 * refused its refresh, or it was dropped) — is exactly `{"active": false}` (RFC 7662 §2.2: nothing more may be said
 * about it). What introspection says, the proxy does (DESIGN §14): the grant is read from the same cache the proxy
 * reads, invalidated across instances like a revocation.
 */
import { IntrospectionRequest, type IntrospectionResponse } from "../../protocol/index.ts";
import type { Call } from "../context.ts";
import { isApproved } from "../domain/agents.ts";
import { findToken } from "../domain/tokens.ts";
import { readJson } from "../http/request.ts";
import { json } from "../http/response.ts";

export async function introspect(call: Call): Promise<Response> {
  const { gw } = call;
  const { token: presented } = await readJson(call, IntrospectionRequest, { form: true });
  const token = await findToken(gw, presented);
  const now = gw.now();
  const live = token !== null && token.revoked_at === null && token.expires_at > now;
  const agent = live ? await gw.store.getAgentByClientId(token.client_id) : null;
  if (!token || !live || !agent || !isApproved(gw, agent)) return json({ active: false } satisfies IntrospectionResponse);
  const grant = token.grant_id === null ? null : await gw.store.getGrant(token.grant_id);
  if (grant === null || grant.status !== "live") return json({ active: false } satisfies IntrospectionResponse);
  const res: IntrospectionResponse = {
    active: true,
    token_type: "Bearer",
    scope: token.scopes.join(" "),
    client_id: token.client_id,
    sub: token.user_id,
    aud: token.provider_id,
    iat: Math.floor(token.created_at / 1000),
    exp: Math.floor(token.expires_at / 1000),
    agent_id: token.agent_id,
    user_id: token.user_id,
    provider_id: token.provider_id,
  };
  return json(res);
}
