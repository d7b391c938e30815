/**
 * The agent keeps its tokens alive by itself (DESIGN §17), for the CLI and `ath mcp` alike: a saved token that has
 * expired or expires within REFRESH_MARGIN_MS is refreshed with its refresh token before use — single-flight across
 * processes, under the credentials lock: whoever takes the lock first refreshes and saves both new tokens; whoever
 * waited finds them saved and uses them. A family the gateway no longer refreshes (reused, revoked, expired) is kept
 * marked dead, so this and every later use is the same error (exit 4, TOKEN_REVOKED / TOKEN_EXPIRED) naming the `ath
 * authorize` to run — one condition, one exit code (issue 40: it was 4, then 3 NO_TOKEN once the token was gone).
 * A refresh that fails otherwise says it was refreshing (POST /ath/token) for the call that needed it.
 */
import type { TokenResponse } from "../../protocol/schemas.ts";
import { audience, exchangeCode } from "../client.ts";
import { ClientError, notConfigured, usageError } from "../errors.ts";
import { withCredentials, type Registration, type SavedToken } from "../home.ts";
import { attest } from "../identity.ts";
import { requireRegistration, requireToken } from "../tokens.ts";
import type { Agent } from "./agent.ts";

/** A token expiring sooner than this is refreshed before use. */
export const REFRESH_MARGIN_MS = 60_000;

/** The saved form of a token response received at `now`. */
export function savedTokenOf(response: TokenResponse, now: number): SavedToken {
  return {
    access_token: response.access_token,
    token_type: response.token_type,
    provider_id: response.provider_id,
    agent_id: response.agent_id,
    effective_scopes: response.effective_scopes,
    scope_intersection: response.scope_intersection,
    obtained_at: new Date(now).toISOString(),
    expires_at: new Date(now + response.expires_in * 1000).toISOString(),
    ...(response.refresh_token === undefined ? {} : { refresh_token: response.refresh_token }),
    ...(response.refresh_expires_in === undefined ? {} : { refresh_expires_at: new Date(now + response.refresh_expires_in * 1000).toISOString() }),
  };
}

export interface Refreshed {
  token: SavedToken;
  /** True when this call refreshed (false: the saved token was fresh, or another process had just refreshed it). */
  refreshed: boolean;
}

/**
 * The saved token for `provider` at `base`, usable for at least REFRESH_MARGIN_MS — refreshed first when needed, or
 * always with `force` (`ath token --refresh`). No token → exit 3 NO_TOKEN; an expired one without a refresh token →
 * exit 3 TOKEN_EXPIRED; a dead family → exit 4.
 */
export async function usableToken(agent: Agent, base: string, provider: string, o: { force?: boolean; since?: number } = {}): Promise<Refreshed> {
  const identity = await agent.identity();
  const seen = requireSaved(await requireRegistration(agent.home, base, identity.agentId), base, provider);
  if (seen.refresh_dead !== undefined) throw deadFamily(base, provider, seen.refresh_dead);
  if (!o.force && fresh(seen, agent.now())) return { token: seen, refreshed: false };
  if (seen.refresh_token === undefined) {
    if (o.force) throw noRefresh(base, provider);
    return { token: requireToken(await requireRegistration(agent.home, base, identity.agentId), base, provider, agent.now()), refreshed: false };
  }
  return withCredentials(agent.home, async (c, save) => {
    const reg = c.gateways[base]?.agents[identity.agentId];
    if (reg === undefined) return { token: requireSaved(undefined, base, provider), refreshed: false };
    const current = requireSaved(reg, base, provider);
    // Another process refreshed while this one waited for the lock: use what it saved (a gateway with a short
    // --token-ttl gives tokens that are always "expiring soon": unexpired is enough here, or every waiter would refresh).
    const unexpired = Date.parse(current.expires_at) > agent.now();
    if (current.access_token !== seen.access_token && unexpired) return { token: current, refreshed: false };
    // …or refreshed it since this refresh was asked for (two `ath token --refresh` started together: one refresh).
    if (o.since !== undefined && Date.parse(current.obtained_at) >= o.since && unexpired) return { token: current, refreshed: false };
    if (current.refresh_dead !== undefined) throw deadFamily(base, provider, current.refresh_dead);
    if (current.refresh_token === undefined) throw noRefresh(base, provider);
    let response: TokenResponse;
    try {
      response = await exchangeCode(
        base,
        {
          grant_type: "refresh_token",
          client_id: reg.client_id,
          client_secret: reg.client_secret,
          agent_attestation: await attest(identity, audience(base, "token")),
          refresh_token: current.refresh_token,
        },
        // Under the lock: stay well inside the time after which a waiting process takes a lock for abandoned.
        { ...agent.http, timeoutMs: Math.min(agent.http.timeoutMs ?? LOCKED_TIMEOUT_MS, LOCKED_TIMEOUT_MS) },
        identity.key,
      );
    } catch (e) {
      const reason = e instanceof ClientError ? String(e.details?.reason ?? "") : "";
      if (e instanceof ClientError && e.code === "INVALID_GRANT" && DEAD.has(reason)) {
        const { refresh_token: _spent, refresh_expires_at: _ends, ...rest } = current;
        reg.tokens[provider] = { ...rest, refresh_dead: reason };
        await save();
        throw deadFamily(base, provider, reason, e.status);
      }
      if (!(e instanceof ClientError)) throw e;
      // The call that needed the token is the person's (`GET /notes`): say the failure was the refresh's.
      const why = Date.parse(current.expires_at) <= agent.now() ? "has expired" : "expires within a minute";
      throw new ClientError(e.kind, e.code, `the token for ${provider} ${why} and refreshing it (POST /ath/token) failed: ${e.message}`, {
        ...(e.status === undefined ? {} : { status: e.status }),
        ...(e.details === undefined ? {} : { details: e.details }),
        cause: e,
      });
    }
    const token = savedTokenOf(response, agent.now());
    reg.tokens[response.provider_id] = token;
    await save();
    return { token, refreshed: true };
  });
}

// internal

/** What a process waiting for the credentials lock tolerates before taking it for abandoned is 10 s. */
const LOCKED_TIMEOUT_MS = 8_000;

/** The gateway's refusals after which the family is dead (DESIGN §17). */
const DEAD = new Set(["refresh_token_reused", "refresh_token_revoked", "refresh_token_expired"]);

function fresh(t: SavedToken, now: number): boolean {
  return Date.parse(t.expires_at) - now > REFRESH_MARGIN_MS;
}

/** The saved token (expired or not), or exit 3 NO_TOKEN naming `ath authorize`. */
function requireSaved(reg: Registration | undefined, base: string, provider: string): SavedToken {
  const t = reg?.tokens[provider];
  if (t !== undefined) return t;
  throw notConfigured("NO_TOKEN", `no token for ${provider} at ${base}`, { gateway: base, provider_id: provider }, authorizeNext(base, provider));
}

/** The family of the saved token died at the gateway: exit 4, the same every time until `ath authorize`. */
function deadFamily(base: string, provider: string, reason: string, status?: number): ClientError {
  const code = reason === "refresh_token_expired" ? "TOKEN_EXPIRED" : "TOKEN_REVOKED";
  return new ClientError("refused", code, `the token for ${provider} at ${base} can no longer be refreshed (${reason})`, {
    ...(status === undefined ? {} : { status }),
    details: { gateway: base, provider_id: provider, reason },
    next: authorizeNext(base, provider),
  });
}

function authorizeNext(base: string, provider: string): string {
  return `run \`ath authorize -g ${base} --provider ${provider}\``;
}

function noRefresh(base: string, provider: string): ClientError {
  return new ClientError("config", "NO_REFRESH_TOKEN", `the token for ${provider} at ${base} has no refresh token (the gateway gave none)`, {
    details: { gateway: base, provider_id: provider },
    next: authorizeNext(base, provider),
  });
}

/**
 * `ath token --refresh [--provider]`: refreshes the saved token of `provider` — by default the only saved one at the
 * target (several → exit 2 naming them) — whatever its time left, unless another process refreshed it since `since`.
 */
export async function refreshSaved(agent: Agent, base: string, provider?: string, since?: number): Promise<Refreshed> {
  const identity = await agent.identity();
  const reg = await requireRegistration(agent.home, base, identity.agentId);
  const providers = Object.keys(reg.tokens);
  const which = provider ?? (providers.length === 1 ? providers[0] : undefined);
  if (which === undefined) {
    if (providers.length === 0) throw notConfigured("NO_TOKEN", `no token saved at ${base}`, { gateway: base }, authorizeNext(base, "<id>"));
    throw usageError(`several tokens are saved at ${base} (${providers.join(", ")}): pass --provider`);
  }
  return usableToken(agent, base, which, { force: true, ...(since === undefined ? {} : { since }) });
}

/**
 * `ath status --refresh`: every saved token of this identity at `base` that expires within REFRESH_MARGIN_MS (and
 * has a refresh token) is refreshed, as a proxied call would; returns what failed, by provider (the rest refreshed).
 */
export async function refreshDue(agent: Agent, base: string): Promise<Record<string, { code: string; message: string }>> {
  const identity = await agent.identity();
  const reg = await requireRegistration(agent.home, base, identity.agentId);
  const failed: Record<string, { code: string; message: string }> = {};
  for (const [provider, t] of Object.entries(reg.tokens)) {
    if (t.refresh_token === undefined || fresh(t, agent.now())) continue;
    try {
      await usableToken(agent, base, provider);
    } catch (e) {
      const err = e as { code?: unknown; message?: string };
      failed[provider] = { code: String(err.code ?? "ERROR"), message: err.message ?? String(e) };
    }
  }
  return failed;
}
