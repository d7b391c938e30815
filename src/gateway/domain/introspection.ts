/**
 * RFC 7662 introspection of an ATH token (DESIGN §7, §14): a live token is described; anything else — unknown,
 * expired, revoked, its agent no longer approved, or its upstream grant dead (the provider refused its refresh, or it
 * was dropped), or a delegated token one of whose ancestors was revoked — is exactly `{"active": false}` (RFC 7662
 * §2.2); a delegated token shows its `act` chain (DESIGN §23). What introspection says, the proxy does: the grant is
 * read from the same cache the proxy reads, invalidated across instances like a revocation.
 */
import type { IntrospectionResponse } from "../../protocol/index.ts";
import type { Gateway } from "../context.ts";
import { findAgent, isApproved } from "./agents.ts";
import { actClaim, chainIsLive } from "./delegation-chain.ts";
import { findToken, tokenExpired } from "./tokens.ts";

export async function introspection(gw: Gateway, presented: string): Promise<IntrospectionResponse> {
  const token = await findToken(gw, presented);
  const now = gw.now();
  const live = token !== null && token.revoked_at === null && !tokenExpired(token, now);
  const agent = live ? await findAgent(gw, token.client_id) : null;
  if (!token || !live || !agent || !isApproved(gw, agent) || !(await chainIsLive(gw, token))) return { active: false };
  const grant = token.grant_id === null ? null : await gw.store.getGrant(token.grant_id);
  if (grant === null || grant.status !== "live") return { active: false };
  const res: IntrospectionResponse = {
    active: true,
    token_type: token.jkt ? "DPoP" : "Bearer",
    ...(token.jkt ? { cnf: { jkt: token.jkt } } : {}),
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
  // DESIGN §23: a delegated token shows its whole chain of actors (RFC 8693 §4.1) and its budget share
  const act = actClaim(token.delegation);
  if (act) Object.assign(res, { act, budget: token.delegation?.budget ?? null });
  return res;
}
