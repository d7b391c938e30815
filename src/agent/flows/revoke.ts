/** Revoke saved tokens at the gateway (POST /ath/revoke with the client credentials) and forget them. */
import { discoverService, revokeToken } from "../client.ts";
import { usageError } from "../errors.ts";
import { updateCredentials } from "../home.ts";
import { requireRegistration, requireToken } from "../tokens.ts";
import type { Agent, Target } from "./agent.ts";

export interface RevokeInput {
  target: Target;
  /**
   * The providers whose token goes (in native mode the service's app when none is named), or "all": every saved
   * token at this gateway, expired ones included (the gateway may still hold them, and revoking is harmless).
   */
  providers: string[] | "all";
}

export interface Revoked {
  gateway: string;
  /** The providers whose token was revoked and forgotten. */
  revoked: string[];
}

/** Revokes each token at the gateway, then forgets it (only if it is still the saved one). */
export async function revoke(input: RevokeInput, agent: Agent): Promise<Revoked> {
  const { base } = input.target;
  let providers = input.providers;
  if (providers.length === 0) {
    if (!input.target.native) throw usageError("revoke needs --provider <id> or --all");
    providers = [(await discoverService(base, agent.http)).app_id];
  }
  const identity = await agent.identity();
  const reg = await requireRegistration(agent.home, base, identity.agentId);
  const targets = providers === "all" ? Object.values(reg.tokens) : providers.map((p) => requireToken(reg, base, p, Number.NEGATIVE_INFINITY));
  const revoked: string[] = [];
  for (const t of targets) {
    await revokeToken(base, { token: t.access_token, client_id: reg.client_id, client_secret: reg.client_secret }, agent.http);
    await updateCredentials(
      agent.home,
      (c) => {
        const saved = c.gateways[base]?.agents[identity.agentId]?.tokens;
        if (saved?.[t.provider_id]?.access_token === t.access_token) delete saved[t.provider_id];
      },
      agent.now,
    );
    revoked.push(t.provider_id);
  }
  return { gateway: base, revoked };
}
