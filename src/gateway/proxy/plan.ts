/**
 * A proxied call's caller, checked once per (presented token, provider) and kept (DESIGN §13, issue 41): the token
 * known, live, not revoked and opening this door, its agent approved, the provider configured with an API, and the
 * upstream access of the token's grant opened. Every one of those checks reads cached records only, so its answer
 * holds exactly as long as the cache's (store/cached.ts): a plan is kept with the cache's `generation` and used only
 * while the generation is unchanged and the cache live — a token revoked, an agent suspended, a provider edited, a
 * grant refreshed or dropped, here or on any instance, and every plan is made again from the store on its next call.
 * The clock's part (the token's expiry, the agent's approval, the grant's freshness) is checked on every call.
 *
 * Kept only for what depends on nothing else: a DPoP caller (each proof is checked, RFC 9449) and a delegated token
 * (its chain, DESIGN §23) are checked in full on every call, as is every call while the cache is bypassed.
 */
import { AthError } from "../../protocol/index.ts";
import type { AgentRecord, ProviderRecord, TokenRecord } from "../../store/types.ts";
import type { Gateway } from "../context.ts";
import { approvalLapsed } from "../domain/agents.ts";
import { warmAccess, type LiveAccess } from "../domain/grants.ts";
import { requireProvider } from "../domain/providers.ts";
import { requireCallerToken, requireDoor, tokenExpired, type CallerCredentials } from "../domain/tokens.ts";

export interface CallerPlan {
  token: TokenRecord;
  agent: AgentRecord;
  /** The provider, whose configuration has an `api_base_url`. */
  record: ProviderRecord & { config: { api_base_url: string } };
  /** The grant's upstream access when it was live and fresh (null: the relay reads it, refreshing first). */
  access: LiveAccess | null;
}

/**
 * The caller of a call to `providerId`'s API: the kept plan when it still holds (no promise, no store read), else
 * checked in full — 401 TOKEN_*, 403 AGENT_UNAPPROVED, PROVIDER_MISMATCH, 502 UPSTREAM_UNAVAILABLE as the checks say.
 */
export function callerPlan(gw: Gateway, caller: CallerCredentials, providerId: string): CallerPlan | Promise<CallerPlan> {
  const kept = caller.scheme === "bearer" && caller.token !== null ? plansOf(gw).get(caller.token) : undefined;
  if (kept !== undefined && holds(gw, kept, providerId)) return kept;
  return checked(gw, caller, providerId);
}

// internal

interface Kept extends CallerPlan {
  generation: number;
  /** Until when the grant's access is fresh (null: no access kept, or it never expires). */
  freshUntil: number | null;
}

/** Plans per gateway, by the token as presented (bounded: emptied when full — a flood of tokens only costs checks). */
const plans = new WeakMap<Gateway, Map<string, Kept>>();
const MAX_PLANS = 10_000;

function plansOf(gw: Gateway): Map<string, Kept> {
  let m = plans.get(gw);
  if (m === undefined) plans.set(gw, (m = new Map()));
  return m;
}

function holds(gw: Gateway, p: Kept, providerId: string): boolean {
  const cache = gw.cache;
  if (cache === undefined || !cache.live || cache.generation !== p.generation || p.token.provider_id !== providerId) return false;
  const now = gw.now();
  // what requireLiveToken, requireApproved and currentAccess ask of the clock (freshUntil: grants.ts warmAccess)
  return !tokenExpired(p.token, now) && !approvalLapsed(p.agent, now) && (p.freshUntil === null || p.freshUntil > now);
}

async function checked(gw: Gateway, caller: CallerCredentials, providerId: string): Promise<CallerPlan> {
  // read before the checks: an invalidation while they run leaves what they read unkept
  const generation = gw.cache?.generation;
  const { token, agent } = await requireCallerToken(gw, caller, providerId);
  // An MCP client's token opens its MCP endpoint only, never the provider's API beside it (RFC 8707 audience).
  requireDoor(token, "proxy");
  if (token.provider_id !== providerId) {
    throw new AthError("PROVIDER_MISMATCH", `This token is for '${token.provider_id}', not '${providerId}'`, { token_provider_id: token.provider_id });
  }
  const record = await requireProvider(gw, providerId);
  if (!record.config.api_base_url) {
    throw new AthError("UPSTREAM_UNAVAILABLE", `Provider '${providerId}' has no api_base_url configured`, { provider_id: providerId });
  }
  const grant = token.grant_id ? await warmAccess(gw, token.grant_id) : null;
  const plan: Kept = {
    token,
    agent,
    record: record as CallerPlan["record"],
    access: grant?.access ?? null,
    generation: generation ?? -1,
    freshUntil: grant?.freshUntil ?? null,
  };
  const cache = gw.cache;
  if (caller.scheme === "bearer" && !token.delegation && cache?.live && cache.generation === generation) {
    const kept = plansOf(gw);
    if (kept.size >= MAX_PLANS) kept.clear();
    kept.set(caller.token!, plan);
  }
  return plan;
}
