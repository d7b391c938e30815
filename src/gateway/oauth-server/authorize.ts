/**
 * GET /oauth/authorize — an MCP client asks a person for access (DESIGN §18): the client and redirect URI checked
 * (else a 400 page: an unverified redirect URI is never followed), then PKCE S256 and the resource required, scopes
 * defaulted; a Phase B session opened and the person sent to ath's consent page, which names the client. Then the
 * existing Phase B runs (the upstream's sign-in, /ath/callback), and GET /oauth/return hands the person back to the
 * client with its code, its state and `iss` (RFC 9207).
 */
import { AthError, PATHS } from "../../protocol/index.ts";
import { MCP_PATHS, MCP_PREFIX } from "../../protocol/mcp-front-door.ts";
import type { McpAuthorizationRecord } from "../../store/mcp-types.ts";
import type { SessionRecord } from "../../store/types.ts";
import type { Call, Gateway } from "../context.ts";
import { randomSecret } from "../crypto/secrets.ts";
import { issueMcpCode, mcpAuthorizationOf, recordMcpAuthorization, returningAuthorization } from "../domain/mcp-authorizations.ts";
import { openSession } from "../domain/sessions.ts";
import { redirect } from "../http/response.ts";
import { providerForResource, resourceOf } from "../mcp/providers.ts";
import { federationForResource } from "../mcp/federation.ts";
import { matchRedirectUri } from "../rules/redirect-uri.ts";
import { agentFor } from "../domain/mcp-clients.ts";
import { redirectHost, resolveClient, type ResolvedClient } from "./clients.ts";

export async function authorize(call: Call): Promise<Response> {
  const { gw } = call;
  const q = new URLSearchParams(call.search);
  const one = (name: string): string | null => {
    const all = q.getAll(name);
    if (all.length > 1) throw new AthError("INVALID_REQUEST", `The parameter ${name} is repeated.`);
    const v = all[0] ?? null;
    if (v !== null && (v.includes("\0") || v.length > 4000)) throw new AthError("INVALID_REQUEST", `The parameter ${name} is malformed.`);
    return v;
  };
  const clientId = one("client_id");
  if (!clientId) throw new AthError("INVALID_REQUEST", "The request names no client_id.");
  let reason = "";
  const client = await resolveClient(gw, clientId, (why) => (reason = why));
  if (!client) throw new AthError("INVALID_REQUEST", `The client ${JSON.stringify(clientId.slice(0, 200))} is not known here${reason ? `: ${reason}` : ""}.`);
  await call.identify({ client_id: client.agentClientId });
  const redirectUri = one("redirect_uri") ?? (client.metadata.redirect_uris.length === 1 ? client.metadata.redirect_uris[0]! : null);
  if (!redirectUri || !matchRedirectUri(client.metadata.redirect_uris, redirectUri)) {
    throw new AthError("INVALID_REQUEST", "The redirect_uri is not one this client registered (or listed in its metadata document).");
  }
  // From here the redirect URI is verified: errors go back to the client (RFC 6749 §4.1.2.1).
  const state = one("state");
  const back = (error: string, description: string) => redirect(errorRedirect(gw, redirectUri, state, error, description), 302);

  if (one("response_type") !== "code") return back("unsupported_response_type", "response_type must be code");
  const challenge = one("code_challenge");
  if (!challenge || !/^[A-Za-z0-9_-]{43}$/.test(challenge)) return back("invalid_request", "code_challenge (PKCE S256) is required");
  if (one("code_challenge_method") !== "S256") return back("invalid_request", "code_challenge_method must be S256");
  const resource = one("resource");
  // DESIGN §22: a federated URL's sign-in is §18's with that resource, at its first member; `{prefix}connect` adds the others
  const federated = await federationForResource(gw, resource);
  const provider = federated ? federated.federation.members[0]!.record : await providerForResource(gw, resource);
  if (!provider) {
    return back("invalid_target", resource === null ? "resource is required: this gateway fronts several MCP servers" : "resource names no MCP server of this gateway");
  }
  const available = provider.config.available_scopes;
  const requested = (one("scope") ?? "").split(" ").filter(Boolean);
  // a federated resource advertises its members' scopes: those of the member signed in at are asked for
  const asked = federated ? requested.filter((s) => available.includes(s)) : requested;
  const unknown = asked.filter((s) => !available.includes(s));
  if (unknown.length) return back("invalid_scope", `not offered by ${provider.provider_id}: ${unknown.join(" ")}`);
  // MCP 2026-07-28: resources no longer advertise offline_access, so clients rarely ask for it; the person's upstream
  // sign-in is still kept refreshable (it lives as long as the client's refresh family): asked for whenever offered.
  const scopes = asked.length ? [...new Set([...asked, ...available.filter((s) => s === "offline_access")])] : available;
  if (scopes.length === 0) return back("invalid_scope", `${provider.provider_id} offers no scope`);

  const agent = await agentFor(gw, { ...client, redirectHost: redirectHost(client.metadata) }, provider.provider_id, available);
  if (agent.status !== "approved") return back("access_denied", "an administrator suspended this client");
  const session = await openSession(gw, {
    clientId: agent.client_id,
    agentId: agent.agent_id,
    providerId: provider.provider_id,
    scopes,
    state: randomSecret(),
    redirectUri: gw.opts.baseUrl + MCP_PATHS.return,
    resource: provider.config.mcp?.resource ?? null,
  });
  const request: McpAuthorizationRecord = {
    session_id: session.session_id,
    client_id: client.clientId,
    agent_client_id: agent.client_id,
    redirect_uri: redirectUri,
    state,
    code_challenge: challenge,
    resource: federated ? federated.resource : resourceOf(gw, provider.provider_id),
    code_hash: null,
    created_at: gw.now(),
    expires_at: session.expires_at,
  };
  await recordMcpAuthorization(gw, request);
  return redirect(`${gw.opts.baseUrl}${PATHS.consent}/${session.handle}`, 302);
}

/**
 * GET /oauth/return — Phase B's end for an MCP client: the callback (or the consent page's Deny) sends the person here
 * with the session's one-time code; ath checks it and gives the client a code of its own, at its redirect URI.
 */
export async function finish(call: Call): Promise<Response> {
  const { gw } = call;
  const q = new URLSearchParams(call.search);
  const { request, session } = await returningAuthorization(gw, q.get("ath_session_id") ?? "", q.get("state") ?? "");
  const error = q.get("error");
  if (error) {
    return redirect(errorRedirect(gw, request.redirect_uri, request.state, error === "access_denied" ? error : "server_error", "the person did not grant access"), 302);
  }
  const code = await issueMcpCode(gw, request, session, q.get("code") ?? "");
  const url = new URL(request.redirect_uri);
  url.searchParams.set("code", code);
  if (request.state !== null) url.searchParams.set("state", request.state);
  url.searchParams.set("iss", gw.opts.baseUrl);
  return redirect(url.href, 302);
}

/** What the consent page shows of an MCP client behind `session`, or null when an ATH agent asked. */
export async function consentClient(gw: Gateway, session: SessionRecord): Promise<{ client: ResolvedClient; redirectUri: string } | null> {
  if (!session.client_id.startsWith(MCP_PREFIX.client)) return null;
  const request = await mcpAuthorizationOf(gw, session.session_id);
  if (!request) return null;
  const client = await resolveClient(gw, request.client_id);
  return client ? { client, redirectUri: request.redirect_uri } : null;
}

// internal

function errorRedirect(gw: Gateway, redirectUri: string, state: string | null, error: string, description: string): string {
  const url = new URL(redirectUri);
  url.searchParams.set("error", error);
  url.searchParams.set("error_description", description);
  if (state !== null) url.searchParams.set("state", state);
  url.searchParams.set("iss", gw.opts.baseUrl);
  return url.href;
}
