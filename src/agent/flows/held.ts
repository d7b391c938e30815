/**
 * What the agent already holds at a gateway, for front ends that decide whether to ask again (`ath mcp`'s
 * ath_authorize and ath_token): its registration there, and its saved token for a provider while it is live.
 */
import { findRegistration, readCredentials, type SavedToken } from "../home.ts";
import { requireRegistration } from "../tokens.ts";
import type { Agent, Target } from "./agent.ts";
import { register } from "./register.ts";

/** Registers for `provider` (and `scopes`) unless this identity is registered at the target; whether it registered now. */
export async function registerIfNeeded(target: Target, provider: string, scopes: string[], purpose: string, agent: Agent): Promise<boolean> {
  const id = await agent.identity();
  if (findRegistration(await readCredentials(agent.home), target.base, id.agentId) !== undefined) return false;
  const r = await register({ target, providers: [provider], scopes, requests: [], redirectUris: [], purpose }, agent);
  return !r.already_registered;
}

/** The saved, unexpired token for `provider`, if any (`mustBeRegistered`: NOT_REGISTERED when there is no registration). */
export async function liveToken(target: Target, provider: string, agent: Agent, mustBeRegistered = false): Promise<SavedToken | undefined> {
  const id = await agent.identity();
  const reg = mustBeRegistered
    ? await requireRegistration(agent.home, target.base, id.agentId)
    : findRegistration(await readCredentials(agent.home), target.base, id.agentId);
  const token = reg?.tokens[provider];
  return token !== undefined && Date.parse(token.expires_at) > agent.now() ? token : undefined;
}
