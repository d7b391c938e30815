/**
 * Delegation to a sub-agent, the agents' half (DESIGN §23): three steps across two identities, each one command.
 * 1. The sub-agent (its own home or key) proves it is itself: `actorToken` — an attestation of it for the token
 *    endpoint, 5 minutes, single use — printed with its client_id for the parent.
 * 2. The parent trades its saved token (refreshed first when it expires soon) and that actor token for the sub-agent's
 *    token: `delegate` — scopes ⊆ its own, an optional budget share. The answer is a handoff document.
 * 3. The sub-agent saves the handoff as its token for that provider: `importHandoff` — checked to be its own (client_id
 *    and agent_id), then used by `ath proxy` like any token (DPoP-bound to its key when the parent's was bound).
 * A delegated token has no refresh token: when it expires, the sub-agent asks its parent again. And the other grant of
 * §23 an agent presents itself: an enterprise IdP's ID-JAG (`assertionToken`).
 */
import { z } from "zod";
import { GRANT_TYPES, TOKEN_TYPES, ActClaim } from "../../protocol/identity.ts";
import type { TokenResponse } from "../../protocol/schemas.ts";
import { audience, grantAt } from "../client.ts";
import { ClientError, notConfigured, usageError } from "../errors.ts";
import { updateCredentials, type SavedToken } from "../home.ts";
import { attest } from "../identity.ts";
import { requireRegistration } from "../tokens.ts";
import type { Agent } from "./agent.ts";
import { savedTokenOf, usableToken } from "./refresh.ts";

/** What the sub-agent hands its parent. */
export interface ActorToken {
  client_id: string;
  agent_id: string;
  actor_token: string;
  expires_at: string;
}

/** The document a parent hands its sub-agent (`ath token --import` reads it). */
export const Handoff = z.object({
  ath_delegated_token: z.literal(1),
  gateway: z.string().refine((s) => URL.canParse(s), { message: "expected the gateway URL" }),
  client_id: z.string().min(1),
  agent_id: z.string().min(1),
  provider_id: z.string().min(1),
  access_token: z.string().startsWith("ath_tk_"),
  token_type: z.enum(["Bearer", "DPoP"]),
  expires_at: z.string(),
  effective_scopes: z.array(z.string()),
  budget: z.number().int().nullable(),
  act: ActClaim,
});
export type Handoff = z.infer<typeof Handoff>;

/** How long an actor token lives: long enough to hand over, short enough to be worth little if it leaks. */
const ACTOR_TTL_SECONDS = 300;

/** Step 1 (the sub-agent): its attestation for the token endpoint, with the client_id the parent names. */
export async function actorToken(agent: Agent, base: string): Promise<ActorToken> {
  const identity = await agent.identity();
  const reg = await requireRegistration(agent.home, base, identity.agentId);
  const { signAttestation } = await import("../attestation.ts");
  const now = agent.now();
  const jwt = await signAttestation(identity.key, { agentId: identity.agentId, audience: audience(base, "token"), ttlSeconds: ACTOR_TTL_SECONDS, now });
  return { client_id: reg.client_id, agent_id: identity.agentId, actor_token: jwt, expires_at: new Date(now + ACTOR_TTL_SECONDS * 1000).toISOString() };
}

export interface DelegateInput {
  /** The sub-agent's client_id (what `ath token --actor` printed). */
  clientId: string;
  actorToken: string;
  /** The provider whose saved token is delegated; default: the only one saved. */
  provider?: string;
  scopes?: string[];
  budget?: number;
}

/** Step 2 (the parent): the sub-agent's token, as a handoff document, and the gateway's answer. */
export async function delegate(agent: Agent, base: string, i: DelegateInput): Promise<{ handoff: Handoff; response: TokenResponse }> {
  const identity = await agent.identity();
  const reg = await requireRegistration(agent.home, base, identity.agentId);
  const providers = Object.keys(reg.tokens);
  const provider = i.provider ?? (providers.length === 1 ? providers[0] : undefined);
  if (provider === undefined) {
    if (providers.length === 0) throw notConfigured("NO_TOKEN", `no token saved at ${base} to delegate: run \`ath authorize -g ${base} --provider <id>\``, { gateway: base });
    throw usageError(`several tokens are saved at ${base} (${providers.join(", ")}): pass --provider`);
  }
  const { token } = await usableToken(agent, base, provider);
  const response = await grantAt(
    base,
    {
      grant_type: GRANT_TYPES.tokenExchange,
      client_id: reg.client_id,
      client_secret: reg.client_secret,
      agent_attestation: await attest(identity, audience(base, "token")),
      subject_token: token.access_token,
      subject_token_type: TOKEN_TYPES.accessToken,
      actor_token: i.actorToken,
      actor_token_type: TOKEN_TYPES.jwt,
      actor_client_id: i.clientId,
      ...(i.scopes === undefined ? {} : { scope: i.scopes.join(" ") }),
      ...(i.budget === undefined ? {} : { budget: i.budget }),
    },
    agent.http,
    identity.key,
  );
  const saved = savedTokenOf(response, agent.now());
  const handoff: Handoff = {
    ath_delegated_token: 1,
    gateway: base,
    client_id: i.clientId,
    agent_id: response.agent_id,
    provider_id: response.provider_id,
    access_token: response.access_token,
    token_type: response.token_type,
    expires_at: saved.expires_at,
    effective_scopes: response.effective_scopes,
    budget: response.budget ?? null,
    act: response.act ?? { sub: identity.agentId, client_id: reg.client_id },
  };
  return { handoff, response };
}

/**
 * Step 3 (the sub-agent): saves the handoff as this identity's token for its provider at its gateway — refused when
 * it was delegated to another client or agent, or has expired. It takes the provider's place: one token a provider.
 */
export async function importHandoff(agent: Agent, doc: unknown): Promise<{ saved: SavedToken; handoff: Handoff }> {
  const parsed = Handoff.safeParse(doc);
  if (!parsed.success) throw usageError("this is not a delegated token's handoff (the JSON `ath token --delegate --out` writes)");
  const handoff = parsed.data;
  const identity = await agent.identity();
  const reg = await requireRegistration(agent.home, handoff.gateway, identity.agentId);
  if (handoff.client_id !== reg.client_id || handoff.agent_id !== identity.agentId) {
    throw usageError(`this token was delegated to ${handoff.client_id} (${handoff.agent_id}), not to this identity (${reg.client_id}, ${identity.agentId})`);
  }
  const now = agent.now();
  if (!(Date.parse(handoff.expires_at) > now)) throw notConfigured("TOKEN_EXPIRED", `this delegated token expired at ${handoff.expires_at}: ask the agent that delegated it for a new one`, { expires_at: handoff.expires_at });
  const saved: SavedToken = {
    access_token: handoff.access_token,
    token_type: handoff.token_type,
    provider_id: handoff.provider_id,
    agent_id: handoff.agent_id,
    effective_scopes: handoff.effective_scopes,
    obtained_at: new Date(now).toISOString(),
    expires_at: handoff.expires_at,
  };
  await updateCredentials(
    agent.home,
    (c) => {
      const r = c.gateways[handoff.gateway]?.agents[identity.agentId];
      if (r !== undefined) r.tokens[handoff.provider_id] = saved;
    },
    agent.now,
  );
  return { saved, handoff };
}

/**
 * An enterprise IdP's ID-JAG for this agent (DESIGN §23): traded at /ath/token for the person's token of `provider`
 * and saved as this identity's token for it. The person has not connected the provider yet: exit 4 CONSENT_REQUIRED,
 * the message naming the URL to open once (then a new assertion is presented).
 */
export async function assertionToken(agent: Agent, base: string, i: { assertion: string; provider: string; scopes?: string[] }): Promise<{ response: TokenResponse; saved: SavedToken }> {
  const identity = await agent.identity();
  const reg = await requireRegistration(agent.home, base, identity.agentId);
  let response: TokenResponse;
  try {
    response = await grantAt(
      base,
      {
        grant_type: GRANT_TYPES.jwtBearer,
        client_id: reg.client_id,
        client_secret: reg.client_secret,
        agent_attestation: await attest(identity, audience(base, "token")),
        assertion: i.assertion,
        provider_id: i.provider,
        ...(i.scopes === undefined ? {} : { scope: i.scopes.join(" ") }),
      },
      agent.http,
      identity.key,
    );
  } catch (e) {
    const url = e instanceof ClientError && e.code === "CONSENT_REQUIRED" ? e.details?.consent_url : undefined;
    if (!(e instanceof ClientError) || typeof url !== "string") throw e;
    // the gateway's words name the field; a person reads the URL itself
    const said = e.message.replace(/: open consent_url once, then present a new assertion$/, "");
    throw new ClientError(e.kind, e.code, `${said}: the person opens ${url} once, then run this again with a new assertion`, {
      ...(e.status === undefined ? {} : { status: e.status }),
      details: e.details ?? {},
      cause: e,
    });
  }
  const saved = savedTokenOf(response, agent.now());
  await updateCredentials(
    agent.home,
    (c) => {
      const r = c.gateways[base]?.agents[identity.agentId];
      if (r !== undefined) r.tokens[response.provider_id] = saved;
    },
    agent.now,
  );
  return { response, saved };
}
