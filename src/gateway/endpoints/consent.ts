/**
 * GET/POST /ath/consent/{handle} — Phase B step 2: the person sees which agent asks for what, and approves
 * (303 to the provider's authorize endpoint) or denies. Browser-facing: errors are thrown and rendered as pages.
 */
import { AthError, PATHS } from "../../protocol/index.ts";
import type { ProviderRecord, SessionRecord } from "../../store/types.ts";
import type { Call, Gateway } from "../context.ts";
import { constantTimeEqual } from "../crypto/secrets.ts";
import { findAgent } from "../domain/agents.ts";
import { connectionPerson } from "../domain/connections.ts";
import { audit } from "../domain/audit.ts";
import { bindingHash, csrfToken, ensureBinding, readBinding } from "../domain/browser-binding.ts";
import { findProvider, openProvider, requireProvider } from "../domain/providers.ts";
import { bindBrowser, denySession, pendingByHandle } from "../domain/sessions.ts";
import { readText } from "../http/request.ts";
import { redirect } from "../http/response.ts";
import { authorizeUrl } from "../oauth/client.ts";
import { formActionSources, htmlResponse, renderConsentPage, renderDeniedPage } from "../pages/index.ts";
import { consentClient } from "../oauth-server/authorize.ts";
import { localhostOnly, redirectHost } from "../oauth-server/clients.ts";

const ANSWERED_ELSEWHERE = "This authorization request was already answered in another browser. Ask the agent for a new link.";

export async function showConsent(call: Call): Promise<Response> {
  const { gw, req } = call;
  const handle = call.params.handle!;
  const session = await pendingByHandle(gw, handle);
  const binding = ensureBinding(gw, req);
  const headers: Record<string, string> = binding.setCookie ? { "set-cookie": binding.setCookie } : {};
  if (session.binding_hash && !constantTimeEqual(bindingHash(binding.value), session.binding_hash)) {
    throw new AthError("STATE_MISMATCH", ANSWERED_ELSEWHERE);
  }
  const record = await requireProvider(gw, session.provider_id);
  const upstream = await upstreamAuthorizeUrl(gw, session, record);
  // An ID-JAG's connection (DESIGN §23) shows no page of ath's either: the enterprise's IdP decided.
  if (record.config.consent_screen === false || (await connectionPerson(gw, session)) !== null) {
    // No page to answer: this GET is the decision, so it binds (and the provider is told to ask: see oauth/client.ts).
    if (!(await bindBrowser(gw, session, bindingHash(binding.value)))) throw new AthError("STATE_MISMATCH");
    return redirect(upstream, 303, headers);
  }

  const agent = await findAgent(gw, session.client_id);
  // An MCP client (DESIGN §18) is named by its metadata and where it sends the person back, not by an agent identity.
  const mcp = await consentClient(gw, session);
  const descriptions = record.config.scope_descriptions ?? {};
  const html = renderConsentPage({
    actionUrl: `${PATHS.consent}/${handle}`,
    gatewayHost: new URL(gw.opts.baseUrl).host,
    csrfToken: csrfToken(handle, binding.value),
    provider: { id: record.provider_id, displayName: record.config.display_name },
    scopes: session.requested_scopes.map((name) => (descriptions[name] ? { name, description: descriptions[name] } : { name })),
    agent: {
      agentId: session.agent_id,
      developerName: agent?.developer.name ?? "unknown",
      developerId: agent?.developer.id ?? "unknown",
      purpose: agent?.purpose ?? null,
    },
    ...(mcp
      ? {
          mcpClient: {
            clientName: mcp.client.metadata.client_name ?? null,
            clientId: mcp.client.clientId,
            redirectHost: redirectHost(mcp.client.metadata),
            localhostOnly: localhostOnly(mcp.client.metadata),
            document: mcp.client.document,
          },
        }
      : {}),
    expiresAt: new Date(session.expires_at),
    now: new Date(gw.now()),
  });
  // Deny sends the person back to the MCP client through /oauth/return: its redirect origin is a form target too.
  return htmlResponse(html, { headers, formAction: formActionSources([upstream, session.user_redirect_uri, mcp?.redirectUri ?? null]) });
}

export async function submitConsent(call: Call): Promise<Response> {
  const { gw, req } = call;
  const handle = call.params.handle!;
  const session = await pendingByHandle(gw, handle);
  const binding = readBinding(gw, req);
  if (!binding) throw new AthError("STATE_MISMATCH", "This browser did not open this authorization request. Open the link from the agent again.");
  let form: URLSearchParams;
  try {
    form = new URLSearchParams(await readText(call));
  } catch {
    throw new AthError("INVALID_REQUEST", "The form could not be read.");
  }
  if (!constantTimeEqual(form.get("csrf") ?? "", csrfToken(handle, binding))) {
    throw new AthError("STATE_MISMATCH", "The form expired or did not come from this page. Reload the authorization link and try again.");
  }
  const decision = form.get("decision");
  if (decision !== "deny" && decision !== "approve") throw new AthError("INVALID_REQUEST", "Choose Approve or Deny.");
  // The first browser to answer owns the request; the provider's callback must come back to it.
  if (!(await bindBrowser(gw, session, bindingHash(binding)))) throw new AthError("STATE_MISMATCH", ANSWERED_ELSEWHERE);
  if (decision === "deny") return denied(gw, session, "access_denied");

  const record = await requireProvider(gw, session.provider_id);
  await audit(gw, "consent.approved", { client_id: session.client_id, agent_id: session.agent_id, provider_id: session.provider_id });
  return redirect(await upstreamAuthorizeUrl(gw, session, record));
}

/**
 * Denies the session and sends the person back to the agent with `error=…`, or shows the denied page when the agent
 * registered no redirect URI.
 */
export async function denied(gw: Gateway, session: SessionRecord, error: string): Promise<Response> {
  if (!(await denySession(gw, session, error))) throw new AthError("SESSION_NOT_FOUND");
  if (session.user_redirect_uri) {
    const url = new URL(session.user_redirect_uri);
    url.searchParams.set("error", error);
    url.searchParams.set("state", session.agent_state);
    url.searchParams.set("ath_session_id", session.session_id);
    return redirect(url.href);
  }
  const provider = await findProvider(gw, session.provider_id);
  return htmlResponse(renderDeniedPage({ providerName: provider?.config.display_name ?? session.provider_id }));
}

// internal

/** The provider's authorization request for this session (DESIGN §3 Phase B step 2). */
async function upstreamAuthorizeUrl(gw: Gateway, session: SessionRecord, record: ProviderRecord): Promise<string> {
  return authorizeUrl(await openProvider(gw, record), {
    redirectUri: gw.opts.baseUrl + PATHS.callback,
    scopes: session.requested_scopes,
    state: session.upstream_state,
    codeChallenge: session.code_challenge,
    resource: session.resource,
  });
}
