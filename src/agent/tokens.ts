/**
 * Saved registrations and tokens: look them up (exit 3 with the next command to run when missing or expired),
 * and forget a pending session that can no longer be exchanged.
 */
import { notConfigured } from "./errors.ts";
import { findRegistration, readCredentials, updateCredentials, type Home, type Registration, type SavedToken } from "./home.ts";

/** The saved registration for (base, agent), or exit 3 naming `ath register`. */
export async function requireRegistration(home: Home, base: string, agentId: string): Promise<Registration> {
  const reg = findRegistration(await readCredentials(home), base, agentId);
  if (reg === undefined) {
    throw notConfigured("NOT_REGISTERED", `not registered at ${base} as ${agentId}`, { gateway: base, agent_id: agentId }, `run \`ath register -g ${base} --provider <id>\``);
  }
  return reg;
}

/** The saved, unexpired token for a provider, or exit 3 naming `ath authorize`. */
export function requireToken(reg: Registration, base: string, provider: string, now: number): SavedToken {
  const token = reg.tokens[provider];
  const next = `run \`ath authorize -g ${base} --provider ${provider}\``;
  if (token === undefined) {
    throw notConfigured("NO_TOKEN", `no token for ${provider} at ${base}`, { gateway: base, provider_id: provider }, next);
  }
  if (Date.parse(token.expires_at) <= now) {
    throw notConfigured("TOKEN_EXPIRED", `the token for ${provider} at ${base} expired at ${token.expires_at}`, { gateway: base, provider_id: provider, expires_at: token.expires_at }, next);
  }
  return token;
}

/** Forgets a pending session that can no longer be exchanged (a failed or timed-out `authorize --wait`). */
export async function forgetPending(home: Home, base: string, agentId: string, sessionId: string, now: () => number): Promise<void> {
  await updateCredentials(
    home,
    (c) => {
      const reg = c.gateways[base]?.agents[agentId];
      if (reg !== undefined) delete reg.pending[sessionId];
    },
    now,
  );
}
