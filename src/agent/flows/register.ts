/**
 * Phase A: register the agent at one gateway for several providers at once and save the client credentials. A
 * gateway that already knows the agent keeps its first registration: the saved one is returned, marked
 * `already_registered`, and the scopes asked for now were not sent.
 */
import type { AgentRegistrationRequest, AgentRegistrationResponse, ProviderScopeRequest } from "../../protocol/schemas.ts";
import { audience, discoverGateway, discoverService, registerAgent } from "../client.ts";
import { ClientError, usageError } from "../errors.ts";
import { findRegistration, readCredentials, updateCredentials, type Registration } from "../home.ts";
import { attest, type Identity } from "../identity.ts";
import { loopbackPortFor } from "../loopback.ts";
import type { Agent, Target } from "./agent.ts";
import { unknownProvider } from "./discover.ts";

export interface RegisterInput {
  target: Target;
  /** Providers asked for the same `scopes`; all a provider offers when `scopes` is empty. */
  providers: string[];
  scopes: string[];
  /** Providers asked for their own scopes. */
  requests: ProviderScopeRequest[];
  developerName?: string;
  developerId?: string;
  purpose?: string;
  /** Redirect URIs besides the loopback one every registration gets. */
  redirectUris: string[];
}

export interface Registered {
  gateway: string;
  agent_id: string;
  /** True when the gateway knew the agent already: `registration` is the saved one, refreshed from the gateway. */
  already_registered: boolean;
  registration: Pick<Registration, "client_id" | "client_secret" | "agent_status" | "approved_providers" | "approval_expires" | "pending_providers">;
  /** Already registered: what this run added (approved now), and what waits for the admin (DESIGN §17). */
  added?: ScopeSet[];
  pending_providers?: ScopeSet[];
  /** Already registered: whether the saved registration was read again from the gateway (false: it has no such extension). */
  refreshed?: boolean;
  /** Already registered, suspended or denied by the admin: nothing can be added (nothing was asked). */
  blocked?: boolean;
}

export interface ScopeSet {
  provider_id: string;
  scopes: string[];
}

/** Registered on every registration so `authorize --wait` can use any loopback port (RFC 8252 §7.3). */
const LOOPBACK_REDIRECT_URI = "http://127.0.0.1/callback";

/**
 * Registers the agent (Phase A) and saves the client credentials, or returns the saved ones when the gateway
 * already knows it.
 * @example await register({ target: agent.target({ mode: "gateway", gateway: "local" }), providers: ["github"], scopes: [], requests: [], redirectUris: [] }, agent)
 */
export async function register(input: RegisterInput, agent: Agent): Promise<Registered> {
  const { base } = input.target;
  if (input.providers.length === 0 && input.requests.length === 0 && !input.target.native) {
    throw usageError("register needs --provider <id> (or --request provider:scopes); see `ath discover`");
  }
  const id = await agent.identity();
  // Read before registering: the client secret is shown once, so a credentials.json that cannot be read (or
  // written) must stop us before the gateway creates a registration we could not save.
  await readCredentials(agent.home);
  const body: AgentRegistrationRequest = {
    agent_id: id.agentId,
    agent_attestation: await attest(id, audience(base, "register")),
    developer: {
      name: input.developerName ?? agent.config.developer_name ?? "local",
      id: input.developerId ?? agent.config.developer_id ?? id.agentId,
    },
    requested_providers: await requestedProviders(input, agent),
    redirect_uris: [...new Set([LOOPBACK_REDIRECT_URI, `http://127.0.0.1:${loopbackPortFor(id.agentId)}/callback`, ...input.redirectUris])],
    ...(input.purpose === undefined ? {} : { purpose: input.purpose }),
  };
  let res: AgentRegistrationResponse;
  try {
    res = await registerAgent(base, body, agent.http);
  } catch (e) {
    if (!(e instanceof ClientError) || e.code !== "AGENT_ALREADY_REGISTERED") throw e;
    const saved = findRegistration(await readCredentials(agent.home), base, id.agentId);
    if (saved === undefined) {
      throw new ClientError(
        "refused",
        e.code,
        `${id.agentId} is already registered at ${base}, but no credentials for it are saved in ${agent.home.dir}: ` +
          "use the ATH_HOME that registered it, another identity (--agent-id/--key), or ask the gateway admin to remove the registration",
        { ...(e.status === undefined ? {} : { status: e.status }) },
      );
    }
    return grow(base, id, saved, body.requested_providers, agent);
  }
  await updateCredentials(
    agent.home,
    (c) => {
      const gw = (c.gateways[base] ??= { agents: {} });
      gw.agents[id.agentId] = { ...res, registered_at: new Date(agent.now()).toISOString(), loopback_port: loopbackPortFor(id.agentId), tokens: {}, pending: {}, exchanged: {} };
    },
    agent.now,
  );
  return { gateway: base, agent_id: id.agentId, already_registered: false, registration: summary(res) };
}

// internal

/**
 * Already registered (DESIGN §17): the registration read again from the gateway (GET /ath/agents/status), so no stale
 * agent_status is shown; scopes asked for now that are neither approved nor waiting are asked for with PATCH
 * /ath/agents/registration. Both saved. A gateway without these extensions: the saved registration, unchanged.
 */
async function grow(base: string, id: Identity, saved: Registration, requested: ProviderScopeRequest[], agent: Agent): Promise<Registered> {
  const { fetchAgentStatus, updateRegistration } = await import("../client.ts");
  const unchanged: Registered = { gateway: base, agent_id: id.agentId, already_registered: true, registration: summary(saved), refreshed: false, added: [], pending_providers: saved.pending_providers ?? [] };
  let live: Awaited<ReturnType<typeof fetchAgentStatus>>;
  try {
    live = await fetchAgentStatus(base, saved, agent.http);
  } catch (e) {
    if (e instanceof ClientError && (e.status === 404 || e.status === 405)) return unchanged;
    throw e;
  }
  const pendingBefore = saved.pending_providers ?? [];
  const has = (providerId: string, scope: string) =>
    live.approved_providers.some((p) => p.provider_id === providerId && p.approved_scopes.includes(scope)) ||
    pendingBefore.some((p) => p.provider_id === providerId && p.scopes.includes(scope));
  const wanted = requested.map((r) => ({ provider_id: r.provider_id, scopes: r.scopes.filter((s) => !has(r.provider_id, s)) })).filter((r) => r.scopes.length > 0);
  let now: Pick<Registration, "agent_status" | "approved_providers" | "approval_expires" | "pending_providers"> = {
    agent_status: live.agent_status,
    approved_providers: live.approved_providers,
    approval_expires: live.approval_expires,
    // What waits for the admin is known from the last PATCH; once the admin approved, it is approved.
    pending_providers: pendingBefore
      .map((p) => ({ provider_id: p.provider_id, scopes: p.scopes.filter((s) => !live.approved_providers.some((a) => a.provider_id === p.provider_id && a.approved_scopes.includes(s))) }))
      .filter((p) => p.scopes.length > 0),
  };
  let added: ScopeSet[] = [];
  // Suspended, or denied by the admin: the gateway would refuse any addition; say so instead of failing.
  const blocked = live.agent_status === "suspended" || (live.agent_status === "denied" && live.approved_providers.some((p) => p.approved_scopes.length > 0));
  if (wanted.length > 0 && !blocked) {
    const res = await updateRegistration(base, saved, { agent_attestation: await attest(id, audience(base, "register")), requested_providers: wanted }, agent.http);
    now = { agent_status: res.agent_status, approved_providers: res.approved_providers, approval_expires: res.approval_expires, pending_providers: res.pending_providers };
    added = res.added;
  }
  await updateCredentials(
    agent.home,
    (c) => {
      const reg = c.gateways[base]?.agents[id.agentId];
      if (reg === undefined || reg.client_id !== saved.client_id) return;
      Object.assign(reg, now);
    },
    agent.now,
  );
  const registration = summary({ ...saved, ...now });
  return { gateway: base, agent_id: id.agentId, already_registered: true, registration, refreshed: true, added, pending_providers: now.pending_providers ?? [], ...(blocked && wanted.length > 0 ? { blocked: true } : {}) };
}

function summary(r: Registered["registration"]): Registered["registration"] {
  const { client_id, client_secret, agent_status, approved_providers, approval_expires } = r;
  return { client_id, client_secret, agent_status, approved_providers, approval_expires, ...(r.pending_providers?.length ? { pending_providers: r.pending_providers } : {}) };
}

/**
 * The request's providers and scopes; in native mode with none named, the service's own app. A provider the gateway
 * does not offer is refused before anything is registered (issue 40: asking for it only registered a denial).
 */
async function requestedProviders(input: RegisterInput, agent: Agent): Promise<ProviderScopeRequest[]> {
  const { base } = input.target;
  const byProvider = new Map(input.requests.map((r) => [r.provider_id, r.scopes]));
  let providers = input.providers;
  if (providers.length === 0 && byProvider.size === 0) providers = [(await discoverService(base, agent.http)).app_id];
  const available = await availableScopes(input.target, agent);
  for (const p of [...providers, ...byProvider.keys()]) {
    if (!available.has(p)) throw unknownProvider(base, p, [...available.keys()]);
  }
  for (const p of providers) byProvider.set(p, input.scopes.length > 0 ? input.scopes : available.get(p)!);
  return [...byProvider].map(([provider_id, scopes]) => ({ provider_id, scopes }));
}

async function availableScopes(target: Target, agent: Agent): Promise<Map<string, string[]>> {
  if (target.native) {
    const doc = await discoverService(target.base, agent.http);
    return new Map([[doc.app_id, doc.auth.scopes_supported]]);
  }
  const doc = await discoverGateway(target.base, agent.http);
  return new Map(doc.supported_providers.map((p) => [p.provider_id, p.available_scopes]));
}
