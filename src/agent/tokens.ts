/**
 * Saved registrations and tokens: look them up (exit 3 with the next command to run when missing or expired)
 * and exchange an agent code for a token, saving it and dropping the pending session in one locked update.
 */
import type { TokenResponse } from "../protocol/schemas.ts";
import { audience, exchangeCode } from "./client.ts";
import { notConfigured } from "./errors.ts";
import { findRegistration, readCredentials, updateCredentials, type Home, type Registration, type SavedToken } from "./home.ts";
import type { HttpOptions } from "./http.ts";
import { attest, type Identity } from "./identity.ts";

/** The saved registration for (base, agent), or exit 3 naming `ath register`. */
export async function requireRegistration(home: Home, base: string, agentId: string): Promise<Registration> {
  const reg = findRegistration(await readCredentials(home), base, agentId);
  if (reg === undefined) {
    throw notConfigured(
      "NOT_REGISTERED",
      `not registered at ${base} as ${agentId}: run \`ath register -g ${base} --provider <id>\``,
      { gateway: base, agent_id: agentId },
    );
  }
  return reg;
}

/** The saved, unexpired token for a provider, or exit 3 naming `ath authorize`. */
export function requireToken(reg: Registration, base: string, provider: string, now: number): SavedToken {
  const token = reg.tokens[provider];
  const next = `run \`ath authorize -g ${base} --provider ${provider}\``;
  if (token === undefined) {
    throw notConfigured("NO_TOKEN", `no token for ${provider} at ${base}: ${next}`, { gateway: base, provider_id: provider });
  }
  if (Date.parse(token.expires_at) <= now) {
    throw notConfigured("TOKEN_EXPIRED", `the token for ${provider} at ${base} expired at ${token.expires_at}: ${next}`, {
      gateway: base,
      provider_id: provider,
      expires_at: token.expires_at,
    });
  }
  return token;
}

export interface ExchangeInput {
  home: Home;
  http: HttpOptions;
  base: string;
  identity: Identity;
  registration: Registration;
  code: string;
  sessionId: string;
  now: () => number;
}

/** POST /ath/token (aud = `${base}/ath/token`), then saves the token and forgets the pending session. */
export async function exchangeAndSave(i: ExchangeInput): Promise<{ response: TokenResponse; saved: SavedToken }> {
  const response = await exchangeCode(
    i.base,
    {
      grant_type: "authorization_code",
      client_id: i.registration.client_id,
      client_secret: i.registration.client_secret,
      agent_attestation: await attest(i.identity, audience(i.base, "token")),
      code: i.code,
      ath_session_id: i.sessionId,
    },
    i.http,
  );
  const now = i.now();
  const saved: SavedToken = {
    access_token: response.access_token,
    token_type: response.token_type,
    provider_id: response.provider_id,
    agent_id: response.agent_id,
    effective_scopes: response.effective_scopes,
    scope_intersection: response.scope_intersection,
    obtained_at: new Date(now).toISOString(),
    expires_at: new Date(now + response.expires_in * 1000).toISOString(),
  };
  await updateCredentials(i.home, (c) => {
    const reg = c.gateways[i.base]?.agents[i.identity.agentId];
    if (reg === undefined) return; // removed meanwhile by another process: nothing to attach the token to
    reg.tokens[response.provider_id] = saved;
    delete reg.pending[i.sessionId];
  });
  return { response, saved };
}
