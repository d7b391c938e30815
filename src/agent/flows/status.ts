/**
 * What the agent has configured and holds: home, gateways, identity, registrations, approvals, tokens with time
 * left and pending sessions — read from the home directory only, no network, no key created. Secrets are masked
 * unless `showSecrets`.
 */
import { readCredentials } from "../home.ts";
import { reveal } from "../mask.ts";
import { resolveBase, resolveGatewayName, type TargetOptions } from "../target.ts";
import type { StatusDocument } from "../../protocol/mcp-tools.ts";
import type { Agent } from "./agent.ts";

export interface StatusInput {
  /** Only the gateway `gateway` names (or, in native mode, the service); else every saved one. */
  target: TargetOptions;
  showSecrets: boolean;
}

/** The document `status` returns; its schema is in protocol/mcp-tools.ts (the `ath_status` tool declares it). */
export type Status = StatusDocument;

/** What the home holds, as one document (the JSON of `ath status`). */
export async function status(input: StatusInput, agent: Agent): Promise<Status> {
  const { config } = agent;
  const now = agent.now();
  const t = input.target;
  const only = t.gateway !== undefined ? resolveGatewayName(t.gateway, config) : t.mode === "native" ? resolveBase(t, config) : undefined;
  const creds = await readCredentials(agent.home);
  const show = input.showSecrets;
  const registrations = Object.entries(creds.gateways)
    .filter(([base]) => only === undefined || base === only)
    .flatMap(([gateway, g]) =>
      Object.entries(g.agents).map(([agent_id, r]) => ({
        gateway,
        agent_id,
        client_id: r.client_id,
        client_secret: reveal(r.client_secret, show),
        agent_status: r.agent_status,
        approval_expires: r.approval_expires,
        approved_providers: r.approved_providers,
        tokens: Object.values(r.tokens).map((tk) => {
          const left = Math.floor((Date.parse(tk.expires_at) - now) / 1000);
          return { provider_id: tk.provider_id, access_token: reveal(tk.access_token, show), effective_scopes: tk.effective_scopes, expires_at: tk.expires_at, seconds_left: Math.max(0, left), expired: left <= 0, refresh_expires_at: tk.refresh_expires_at ?? null };
        }),
        pending: Object.entries(r.pending).map(([id, p]) => ({ ath_session_id: id, provider_id: p.provider_id, scopes: p.scopes, created_at: p.created_at })),
      })),
    );
  return {
    home: agent.home.dir,
    default_gateway: config.default_gateway ?? null,
    gateways: config.gateways,
    identity: await identity(agent),
    registrations,
  };
}

// internal

async function identity(agent: Agent): Promise<Status["identity"]> {
  const keyPath = agent.keyPath;
  const keyExists = await Bun.file(keyPath).exists();
  let agentId = agent.overrides.agentId ?? agent.config.agent_id ?? null;
  // The did:key identity needs the key; status never creates one.
  if (agentId === null && keyExists) {
    try {
      agentId = (await agent.identity()).agentId;
    } catch (e) {
      if ((e as { code?: string }).code !== "BAD_KEY" && (e as { kind?: string }).kind !== "usage") throw e;
      return { agent_id: null, key_path: keyPath, key_exists: true, key_error: (e as Error).message };
    }
  }
  return { agent_id: agentId, key_path: keyPath, key_exists: keyExists };
}

/** How one registration's refresh went: `refreshed: true`, or the error (its saved values then shown as they were). */
export type RefreshOutcome = { refreshed: true } | { refreshed: false; refresh_error?: { code: string; message: string } };

/** The status document after a refresh: each registration says how its refresh went. */
export type RefreshedStatus = Status & { registrations: (Status["registrations"][number] & RefreshOutcome)[] };

/**
 * `status --refresh`: asks each gateway for the live status of the registrations `status` shows (GET
 * /ath/agents/status), saves what it says under the credentials lock, and answers the status read again.
 */
export async function refreshedStatus(
  input: StatusInput,
  agent: Agent,
  o: { onTokenNotRefreshed?: (provider: string, gateway: string, message: string) => void } = {},
): Promise<RefreshedStatus> {
  const shown = new Set((await status(input, agent)).registrations.map((r) => `${r.gateway} ${r.agent_id}`));
  const outcomes = new Map<string, RefreshOutcome>();
  // loaded only for --refresh: plain `ath status` makes no request
  const [{ updateCredentials }, { fetchAgentStatus }, { oneLine }] = await Promise.all([import("../home.ts"), import("../client.ts"), import("../errors.ts")]);
  const saved = await readCredentials(agent.home);
  const live = await Promise.all(
    Object.entries(saved.gateways).flatMap(([gateway, g]) =>
      Object.entries(g.agents).filter(([agentId]) => shown.has(`${gateway} ${agentId}`)).map(async ([agentId, reg]) => {
        try {
          return { gateway, agentId, status: await fetchAgentStatus(gateway, reg, agent.http) };
        } catch (e) {
          const err = e as { code?: unknown; message?: string };
          outcomes.set(`${gateway} ${agentId}`, { refreshed: false, refresh_error: { code: String(err.code ?? "ERROR"), message: oneLine(err.message ?? String(e)) } });
          return undefined;
        }
      }),
    ),
  );
  // DESIGN §17: tokens of this identity that expire within a minute are refreshed too (as a proxied call would).
  const { refreshDue } = await import("./refresh.ts");
  const me = await agent.identity().then((i) => i.agentId, () => undefined);
  for (const l of live) {
    if (!l || l.agentId !== me || l.status.agent_status !== "approved") continue;
    const failed = await refreshDue(agent, l.gateway).catch(() => ({}));
    for (const [provider, err] of Object.entries(failed)) o.onTokenNotRefreshed?.(provider, l.gateway, oneLine(err.message));
  }
  await updateCredentials(agent.home, (c) => {
    for (const l of live) {
      const reg = l && c.gateways[l.gateway]?.agents[l.agentId];
      if (!l || !reg || reg.client_id !== l.status.client_id) continue;
      reg.agent_status = l.status.agent_status;
      reg.approved_providers = l.status.approved_providers;
      reg.approval_expires = l.status.approval_expires;
      outcomes.set(`${l.gateway} ${l.agentId}`, { refreshed: true });
    }
  });
  const doc = await status(input, agent);
  return { ...doc, registrations: doc.registrations.map((r) => ({ ...r, ...(outcomes.get(`${r.gateway} ${r.agent_id}`) ?? { refreshed: false as const }) })) };
}
