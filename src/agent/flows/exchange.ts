/**
 * Phase B, the agent's half: exchange the one-time code for a token (RFC 6749 §4.1.3) and save it, dropping the
 * pending session in the same locked update. The session is the one named, else the only live pending one. A code
 * this home already exchanged is never sent again: the token it gave is returned, marked `already_exchanged`.
 */
import type { TokenResponse } from "../../protocol/schemas.ts";
import { audience, exchangeCode } from "../client.ts";
import { ClientError, notConfigured } from "../errors.ts";
import { isPendingLive, updateCredentials, type Registration, type SavedToken } from "../home.ts";
import { attest, type Identity } from "../identity.ts";
import { forgetPending, requireRegistration } from "../tokens.ts";
import type { Agent, Target } from "./agent.ts";
import { savedTokenOf } from "./refresh.ts";

export interface ExchangeInput {
  target: Target;
  code: string;
  /** The ath_session_id; default: the only live pending session (of `provider`, if given). */
  session?: string;
  provider?: string;
}

export interface Exchanged {
  /** The gateway's answer; for an already exchanged code, the saved token's (`expires_in` counted from now). */
  response: TokenResponse;
  saved: SavedToken;
  already_exchanged: boolean;
}

/** Exchanges `code` (once) and saves the token; errors are ClientErrors (exit 3 when no session fits, 4 when refused). */
export async function exchange(input: ExchangeInput, agent: Agent): Promise<Exchanged> {
  const { base } = input.target;
  const identity = await agent.identity();
  const registration = await requireRegistration(agent.home, base, identity.agentId);
  // A code is single-use: a re-run (the agent lost the first answer) must not send it against another session.
  const previous = alreadyExchanged(registration, input.code, base);
  if (previous !== undefined) return { response: responseOf(previous, agent.now()), saved: previous, already_exchanged: true };
  const sessionId = input.session ?? pickPending(registration, base, agent.now(), input.provider);
  return exchangeSession({ agent, base, identity, registration, code: input.code, sessionId });
}

/** POST /ath/token for a known session (aud = `${base}/ath/token`), then saves the token and forgets the session. */
export async function exchangeSession(i: {
  agent: Agent;
  base: string;
  identity: Identity;
  registration: Registration;
  code: string;
  sessionId: string;
}): Promise<Exchanged> {
  const { agent, base, identity } = i;
  let response: TokenResponse;
  try {
    response = await exchangeCode(
      base,
      {
        grant_type: "authorization_code",
        client_id: i.registration.client_id,
        client_secret: i.registration.client_secret,
        agent_attestation: await attest(identity, audience(base, "token")),
        code: i.code,
        ath_session_id: i.sessionId,
      },
      agent.http,
      identity.key,
    );
  } catch (e) {
    // A wrong code or authorization_pending may be retried with the same session; a dead session may not.
    if (e instanceof ClientError && DEAD_SESSION.has(e.code)) await forgetPending(agent.home, base, identity.agentId, i.sessionId, agent.now);
    throw e instanceof ClientError && e.code === "INVALID_GRANT" ? wrongCode(e, i.sessionId) : e;
  }
  const now = agent.now();
  const saved = savedTokenOf(response, now);
  await updateCredentials(
    agent.home,
    (c) => {
      const reg = c.gateways[base]?.agents[identity.agentId];
      if (reg === undefined) return; // removed meanwhile by another process: nothing to attach the token to
      reg.tokens[response.provider_id] = saved;
      delete reg.pending[i.sessionId];
      reg.exchanged[codeKey(i.code)] = { ath_session_id: i.sessionId, provider_id: response.provider_id, exchanged_at: saved.obtained_at };
    },
    agent.now,
  );
  return { response, saved, already_exchanged: false };
}

// internal

/** The gateway's answers after which a session can never be exchanged: its pending entry is dropped. */
const DEAD_SESSION = new Set(["SESSION_NOT_FOUND", "SESSION_EXPIRED", "USER_DENIED"]);

/**
 * The gateway's INVALID_GRANT said plainly: the code is what is wrong. A session nobody approved yet has no code at
 * all (`authorization_pending`), so a code sent against it belongs to another authorization, or is mistyped.
 */
function wrongCode(e: ClientError, sessionId: string): ClientError {
  const pending = (e.details as { reason?: unknown } | undefined)?.reason === "authorization_pending";
  const message = pending
    ? `${e.message}: nobody has approved ${sessionId} yet, so this code is not its code — a code belongs to the session whose consent page showed it (pass that one's --session), or the person has not finished yet`
    : `${e.message}: the code is not the one the consent page showed for ${sessionId} (mistyped?); the session still waits for the right code`;
  return new ClientError(e.kind, e.code, message, { ...(e.status === undefined ? {} : { status: e.status }), ...(e.details === undefined ? {} : { details: e.details }), cause: e });
}

/** The key of an exchanged code in credentials.json: its SHA-256, hex (the code itself is never stored). */
function codeKey(code: string): string {
  return new Bun.CryptoHasher("sha256").update(code).digest("hex");
}

/**
 * The saved token a previous exchange of `code` gave, or undefined when this home never exchanged it. Exchanged,
 * but its token is gone (revoked, or replaced by a later authorization): exit 3, since the code cannot be reused.
 */
function alreadyExchanged(reg: Registration, code: string, base: string): SavedToken | undefined {
  const done = reg.exchanged[codeKey(code)];
  if (done === undefined) return undefined;
  const token = reg.tokens[done.provider_id];
  if (token !== undefined && token.obtained_at === done.exchanged_at) return token;
  throw notConfigured(
    "CODE_ALREADY_EXCHANGED",
    `this code was already exchanged at ${done.exchanged_at} and its token for ${done.provider_id} is no longer saved (revoked or replaced)`,
    { gateway: base, provider_id: done.provider_id, ath_session_id: done.ath_session_id },
    `run \`ath authorize -g ${base} --provider ${done.provider_id}\` for a new one`,
  );
}

/** The token response a saved token stands for (`expires_in` counted from now). */
function responseOf(t: SavedToken, now: number): TokenResponse {
  const effective = t.effective_scopes;
  return {
    access_token: t.access_token,
    token_type: t.token_type === "DPoP" ? "DPoP" : "Bearer",
    expires_in: Math.max(0, Math.floor((Date.parse(t.expires_at) - now) / 1000)),
    effective_scopes: effective,
    provider_id: t.provider_id,
    agent_id: t.agent_id,
    scope_intersection: t.scope_intersection ?? { agent_approved: effective, user_consented: effective, effective },
    // the refresh token the first answer carried, so a re-run answers what the lost first answer said (DESIGN §17)
    ...(t.refresh_token === undefined ? {} : { refresh_token: t.refresh_token }),
    ...(t.refresh_expires_at === undefined ? {} : { refresh_expires_in: Math.max(0, Math.floor((Date.parse(t.refresh_expires_at) - now) / 1000)) }),
  };
}

/**
 * The session `ath token --code` without `--session` exchanges against: the only live pending one (of `provider`,
 * if given). None → exit 3 NO_PENDING_SESSION; several → exit 3 AMBIGUOUS_SESSION listing them, since a code sent
 * against another session answers `authorization_pending`, which an agent would poll on forever.
 */
function pickPending(reg: Registration, base: string, now: number, provider?: string): string {
  const live = Object.entries(reg.pending)
    .filter(([, p]) => isPendingLive(p, now) && (provider === undefined || p.provider_id === provider))
    .sort(([, a], [, b]) => b.created_at.localeCompare(a.created_at));
  const which = provider === undefined ? "" : ` for ${provider}`;
  const [only, ...others] = live;
  if (only === undefined) {
    throw notConfigured(
      "NO_PENDING_SESSION",
      `no unexpired pending authorization${which} at ${base} (sessions last 10 minutes)`,
      undefined,
      `pass --session <ath_sess_…>, or run \`ath authorize -g ${base} --provider ${provider ?? "<id>"}\` again`,
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
