/**
 * Saved registrations and tokens: look them up (exit 3 with the next command to run when missing or expired)
 * and exchange an agent code for a token, saving it and dropping the pending session in one locked update.
 */
import type { TokenResponse } from "../protocol/schemas.ts";
import { audience, exchangeCode } from "./client.ts";
import { ClientError, notConfigured } from "./errors.ts";
import { findRegistration, isPendingLive, readCredentials, updateCredentials, type Home, type PendingSession, type Registration, type SavedToken } from "./home.ts";
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

/** Pending sessions (unexpired at `now`) of a provider, or of any, newest first. */
export function livePending(reg: Registration, now: number, provider?: string): [string, PendingSession][] {
  return Object.entries(reg.pending)
    .filter(([, p]) => isPendingLive(p, now) && (provider === undefined || p.provider_id === provider))
    .sort(([, a], [, b]) => b.created_at.localeCompare(a.created_at));
}

/** The key of an exchanged code in credentials.json: its SHA-256, hex (the code itself is never stored). */
export function codeKey(code: string): string {
  return new Bun.CryptoHasher("sha256").update(code).digest("hex");
}

/**
 * The session `ath token --code` without `--session` exchanges against: the only live pending one (of `provider`,
 * if given). None → exit 3 NO_PENDING_SESSION; several → exit 3 AMBIGUOUS_SESSION listing them, since a code sent
 * against another session answers `authorization_pending`, which an agent would poll on forever.
 */
export function pickPending(reg: Registration, base: string, now: number, provider?: string): string {
  const live = livePending(reg, now, provider);
  const which = provider === undefined ? "" : ` for ${provider}`;
  const [only, ...others] = live;
  if (only === undefined) {
    throw notConfigured(
      "NO_PENDING_SESSION",
      `no unexpired pending authorization${which} at ${base} (sessions last 10 minutes): pass --session <ath_sess_…>, ` +
        `or run \`ath authorize -g ${base} --provider ${provider ?? "<id>"}\` again`,
    );
  }
  if (others.length === 0) return only[0];
  const sessions = live.map(([id, p]) => ({ ath_session_id: id, provider_id: p.provider_id, created_at: p.created_at }));
  throw notConfigured(
    "AMBIGUOUS_SESSION",
    `${live.length} pending authorizations${which} at ${base} (${sessions.map((x) => `${x.ath_session_id} ${x.provider_id} ${x.created_at}`).join("; ")}): ` +
      "pass --session with the ath_session_id of the URL the person approved",
    { gateway: base, sessions },
  );
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

/** The gateway's answers after which a session can never be exchanged: its pending entry is dropped. */
const DEAD_SESSION = new Set(["SESSION_NOT_FOUND", "SESSION_EXPIRED", "USER_DENIED"]);

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
  let response: TokenResponse;
  try {
    response = await exchangeCode(
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
  } catch (e) {
    // A wrong code or authorization_pending may be retried with the same session; a dead session may not.
    if (e instanceof ClientError && DEAD_SESSION.has(e.code)) await forgetPending(i.home, i.base, i.identity.agentId, i.sessionId, i.now);
    throw e;
  }
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
  await updateCredentials(
    i.home,
    (c) => {
      const reg = c.gateways[i.base]?.agents[i.identity.agentId];
      if (reg === undefined) return; // removed meanwhile by another process: nothing to attach the token to
      reg.tokens[response.provider_id] = saved;
      delete reg.pending[i.sessionId];
      reg.exchanged[codeKey(i.code)] = { ath_session_id: i.sessionId, provider_id: response.provider_id, exchanged_at: saved.obtained_at };
    },
    i.now,
  );
  return { response, saved };
}
