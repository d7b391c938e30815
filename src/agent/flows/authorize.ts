/**
 * Phase B, starting the user's consent: POST /ath/authorize and save the pending session, whose code `exchange`
 * later turns into a token. `authorizeAndWait` does it all in one step: it receives the redirect on a loopback port
 * (RFC 8252 §7.3), exchanges the code and saves the token, and leaves no pending session behind when that fails.
 */
import { gatewayLink } from "../links.ts";
import { audience, discoverService, fetchAgentStatus, startAuthorization } from "../client.ts";
import { ClientError, usageError } from "../errors.ts";
import { updateCredentials, type Registration } from "../home.ts";
import { attest, type Identity } from "../identity.ts";
import { startLoopback } from "../loopback.ts";
import { forgetPending, requireRegistration } from "../tokens.ts";
import type { Agent, Target } from "./agent.ts";
import { exchangeSession, type Exchanged } from "./exchange.ts";

export interface AuthorizeInput {
  target: Target;
  /** Provider id; in native mode the service's app_id when omitted. */
  provider?: string;
  /** Default: the scopes approved for the provider at registration. */
  scopes: string[];
  /** user_redirect_uri to send; without one the gateway shows the code on a page. */
  redirectUri?: string;
  /** RFC 8707 resource indicator. */
  resource?: string;
}

/** A started authorization: the person approves at `authorization_url`; the pending session is saved. */
export interface Authorization {
  gateway: string;
  agent_id: string;
  provider_id: string;
  scopes: string[];
  authorization_url: string;
  ath_session_id: string;
  user_redirect_uri?: string;
}

export interface AuthorizeWaitInput extends Omit<AuthorizeInput, "redirectUri"> {
  /** How long to wait for the approval; the gateway keeps a session at most 600 s. */
  timeoutMs: number;
  /** Called once the session is started and saved, before the wait: the person must be shown the URL now. */
  onStarted?: (a: Authorization & { user_redirect_uri: string }) => void;
  /** Ends the wait early: CANCELLED, and the pending session is forgotten. */
  signal?: AbortSignal;
}

/**
 * Starts the consent and saves the pending session; the person approves at `authorization_url`, then `exchange`
 * takes the code.
 * @example const a = await authorize({ target, provider: "github", scopes: [] }, agent) // show a.authorization_url
 */
export async function authorize(input: AuthorizeInput, agent: Agent): Promise<Authorization> {
  return start(await prepare(input, agent), input, agent, input.redirectUri);
}

/** Authorizes and waits for the loopback redirect, then exchanges its code: the token is saved. */
export async function authorizeAndWait(input: AuthorizeWaitInput, agent: Agent): Promise<Exchanged> {
  const p = await prepare(input, agent);
  const state = newState();
  const receiver = startLoopback(state, {
    timeoutMs: input.timeoutMs,
    retry: `ath authorize -g ${p.base} --provider ${p.provider}`,
    ...(input.signal === undefined ? {} : { signal: input.signal }),
    ...(p.registration.loopback_port === undefined ? {} : { port: p.registration.loopback_port }),
  });
  try {
    const started = await start(p, input, agent, receiver.redirectUri, state);
    try {
      input.onStarted?.({ ...started, user_redirect_uri: receiver.redirectUri });
      const callback = await receiver.result;
      return await exchangeSession({ ...p, agent, code: callback.code, sessionId: callback.sessionId ?? started.ath_session_id });
    } catch (e) {
      // Only this receiver could get the code: a failed or timed-out wait leaves nothing an exchange could use, so
      // the pending entry goes (a failure to forget it must not hide the cause).
      await abandon(started, agent).catch(() => undefined);
      throw e;
    }
  } finally {
    receiver.stop();
  }
}

/** Forgets a started authorization that will not be completed (the person gave up, the process is ending). */
export function abandon(a: Pick<Authorization, "gateway" | "agent_id" | "ath_session_id">, agent: Agent): Promise<void> {
  return forgetPending(agent.home, a.gateway, a.agent_id, a.ath_session_id, agent.now);
}

// internal

interface Prepared {
  base: string;
  identity: Identity;
  registration: Registration;
  provider: string;
  scopes: string[];
}

async function prepare(input: Omit<AuthorizeInput, "redirectUri">, agent: Agent): Promise<Prepared> {
  const { base } = input.target;
  const identity = await agent.identity();
  const registration = await requireRegistration(agent.home, base, identity.agentId);
  const provider = input.provider ?? (input.target.native ? (await discoverService(base, agent.http)).app_id : undefined);
  if (provider === undefined) throw usageError("authorize needs --provider <id>");
  const scopes = input.scopes.length > 0 ? input.scopes : registration.approved_providers.find((p) => p.provider_id === provider)?.approved_scopes ?? [];
  if (scopes.length === 0) throw usageError(`no scopes for ${provider}: pass --scopes (none were approved for it at registration)`);
  return { base, identity, registration, provider, scopes };
}

async function start(p: Prepared, input: Pick<AuthorizeInput, "resource">, agent: Agent, redirectUri?: string, state = newState()): Promise<Authorization> {
  let res: Awaited<ReturnType<typeof startAuthorization>>;
  try {
    res = await startAuthorization(
      p.base,
      {
        client_id: p.registration.client_id,
        agent_attestation: await attest(p.identity, audience(p.base, "authorize")),
        provider_id: p.provider,
        scopes: p.scopes,
        state,
        ...(redirectUri === undefined ? {} : { user_redirect_uri: redirectUri }),
        ...(input.resource === undefined ? {} : { resource: input.resource }),
      },
      agent.http,
    );
  } catch (e) {
    throw await explained(e, p, agent);
  }
  // the consent page a person is sent to: the gateway's own origin only (DESIGN §14)
  gatewayLink(res.authorization_url, p.base);
  await updateCredentials(
    agent.home,
    (c) => {
      const reg = c.gateways[p.base]?.agents[p.identity.agentId];
      if (reg === undefined) return;
      reg.pending[res.ath_session_id] = {
        provider_id: p.provider,
        scopes: p.scopes,
        state,
        authorization_url: res.authorization_url,
        created_at: new Date(agent.now()).toISOString(),
        ...(redirectUri === undefined ? {} : { user_redirect_uri: redirectUri }),
      };
    },
    agent.now,
  );
  return {
    gateway: p.base,
    agent_id: p.identity.agentId,
    provider_id: p.provider,
    scopes: p.scopes,
    authorization_url: res.authorization_url,
    ath_session_id: res.ath_session_id,
    ...(redirectUri === undefined ? {} : { user_redirect_uri: redirectUri }),
  };
}

/**
 * A refusal made actionable (DESIGN §17 "Next steps in refusals"): SCOPE_NOT_APPROVED names the scopes and the `ath
 * register` that asks for them; AGENT_UNAPPROVED reads the agent's true status from the gateway, saves it (the saved
 * one said `pending` or `approved` — issue 35) and names what the operator runs.
 */
async function explained(e: unknown, p: Prepared, agent: Agent): Promise<unknown> {
  if (!(e instanceof ClientError)) return e;
  const keep = { ...(e.status === undefined ? {} : { status: e.status }), ...(e.details === undefined ? {} : { details: e.details }), cause: e };
  if (e.code === "SCOPE_NOT_APPROVED") {
    const asked = e.details?.unapproved_scopes;
    const scopes = Array.isArray(asked) ? asked.filter((s): s is string => typeof s === "string") : [];
    if (scopes.length === 0) return e;
    const are = scopes.length === 1 ? "is" : "are";
    return new ClientError(e.kind, e.code, `${e.reason}: ${scopes.join(", ")} ${are} not approved for this agent at ${p.provider}`, {
      ...keep,
      next: `ask for ${scopes.length === 1 ? "it" : "them"} with \`ath register -g ${p.base} --provider ${p.provider} --scopes ${scopes.join(",")}\` (the gateway's policy or its operator decides)`,
    });
  }
  if (e.code === "AGENT_UNAPPROVED") {
    const live = await fetchAgentStatus(p.base, p.registration, agent.http).catch(() => undefined);
    if (live !== undefined) {
      await updateCredentials(
        agent.home,
        (c) => {
          const reg = c.gateways[p.base]?.agents[p.identity.agentId];
          if (reg === undefined || reg.client_id !== p.registration.client_id) return;
          Object.assign(reg, { agent_status: live.agent_status, approved_providers: live.approved_providers, approval_expires: live.approval_expires });
        },
        agent.now,
      );
    }
    const status = live === undefined ? "" : `: this agent is ${live.agent_status} at ${p.base}`;
    return new ClientError(e.kind, e.code, `${e.reason}${status}`, {
      ...keep,
      next: `the gateway's operator can approve it with \`ath admin agents approve ${p.registration.client_id}\``,
    });
  }
  return e;
}

/** 256 random bits, base64url: the `state` that ties the redirect to this authorization. */
function newState(): string {
  return Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("base64url");
}
