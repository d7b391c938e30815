/**
 * A person's connection of a provider for an ID-JAG (DESIGN §23): the enterprise's IdP decided the client may act for
 * the person, but ath holds no upstream grant of theirs yet. A Phase B session is opened for (client, provider, the
 * assertion's scopes) and marked with the person (`{issuer}#{sub}`): ath's consent page is skipped (the IdP decided;
 * the upstream still shows its own sign-in and consent), and the grant the callback stores is the person's — not the
 * upstream account's id — so the next ID-JAG for that person finds it. Whoever opens the URL connects their upstream
 * account for that person: it goes to the client the IdP named, as an authorization URL does (docs/identity.md).
 */
import { PATHS } from "../../protocol/index.ts";
import type { AgentRecord, ProviderRecord, SessionRecord } from "../../store/types.ts";
import type { Gateway } from "../context.ts";
import { randomSecret } from "../crypto/secrets.ts";
import { openSession } from "./sessions.ts";

/** Opens the connection session; returns its URL (the consent page, which forwards to the upstream at once). */
export async function openConnection(gw: Gateway, o: { agent: AgentRecord; provider: ProviderRecord; person: string; scopes: string[] }): Promise<string> {
  const session = await openSession(gw, {
    clientId: o.agent.client_id,
    agentId: o.agent.agent_id,
    providerId: o.provider.provider_id,
    scopes: o.scopes,
    state: randomSecret(),
    redirectUri: null,
    resource: o.provider.config.mcp?.resource ?? null,
  });
  await gw.store.recordConnection({ session_id: session.session_id, person: o.person, expires_at: session.expires_at }, gw.now());
  return `${gw.opts.baseUrl}${PATHS.consent}/${session.handle}`;
}

/** The person a session connects a provider for, or null for an ordinary consent. */
export async function connectionPerson(gw: Gateway, session: SessionRecord): Promise<string | null> {
  return (await gw.store.getConnection(session.session_id))?.person ?? null;
}
