/**
 * GET/POST /ath/consent/{handle} — Phase B step 2: the person sees which agent asks for what, and approves
 * (303 to the provider's authorize endpoint) or denies. Browser-facing: failures render HTML pages.
 */
import { PATHS, type ErrorCode } from "../../protocol/index.ts";
import type { ProviderRecord, SessionRecord } from "../../store/types.ts";
import { audit } from "../domain/audit.ts";
import { bindingHash, csrfToken, ensureBinding, readBinding } from "../domain/browser-binding.ts";
import type { Gateway } from "../context.ts";
import { readText, redirect } from "../http.ts";
import { authorizeUrl } from "../oauth/client.ts";
import { formActionSources, htmlResponse, renderConsentPage, renderDeniedPage } from "../pages/index.ts";
import { errorPage } from "../pages/errors.ts";
import { openProvider } from "../domain/providers.ts";
import { constantTimeEqual } from "../crypto/secrets.ts";

export async function showConsent(gw: Gateway, req: Request, handle: string): Promise<Response> {
  const session = await gw.store.getSessionByHandle(handle);
  const problem = sessionProblem(gw, session);
  if (problem || !session) return errorPage(problem ?? "SESSION_NOT_FOUND");
  const binding = ensureBinding(gw, req);
  const headers: Record<string, string> = binding.setCookie ? { "set-cookie": binding.setCookie } : {};
  if (session.binding_hash && !constantTimeEqual(bindingHash(binding.value), session.binding_hash)) {
    return errorPage("STATE_MISMATCH", "This authorization request was already answered in another browser. Ask the agent for a new link.");
  }
  const record = await gw.store.getProvider(session.provider_id);
  if (!record) return errorPage("NOT_FOUND", `The provider '${session.provider_id}' is no longer configured.`);
  const upstream = await upstreamAuthorizeUrl(gw, session, record);
  if (record.config.consent_screen === false) {
    // No page to answer: this GET is the decision, so it binds (and the provider is told to ask: see oauth.ts).
    if (!(await gw.store.bindSession(session.session_id, bindingHash(binding.value)))) return errorPage("STATE_MISMATCH");
    return redirect(upstream, 303, headers);
  }

  const agent = await gw.store.getAgentByClientId(session.client_id);
  const descriptions = record.config.scope_descriptions ?? {};
  const html = renderConsentPage({
    actionUrl: `${PATHS.consent}/${handle}`,
    csrfToken: csrfToken(handle, binding.value),
    provider: { id: record.provider_id, displayName: record.config.display_name },
    scopes: session.requested_scopes.map((name) => (descriptions[name] ? { name, description: descriptions[name] } : { name })),
    agent: {
      agentId: session.agent_id,
      developerName: agent?.developer.name ?? "unknown",
      developerId: agent?.developer.id ?? "unknown",
      purpose: agent?.purpose ?? null,
    },
    expiresAt: new Date(session.expires_at),
    now: new Date(gw.now()),
  });
  return htmlResponse(html, { headers, formAction: formActionSources([upstream, session.user_redirect_uri]) });
}

export async function submitConsent(gw: Gateway, req: Request, handle: string): Promise<Response> {
  const session = await gw.store.getSessionByHandle(handle);
  const problem = sessionProblem(gw, session);
  if (problem || !session) return errorPage(problem ?? "SESSION_NOT_FOUND");
  const binding = readBinding(gw, req);
  if (!binding) return errorPage("STATE_MISMATCH", "This browser did not open this authorization request. Open the link from the agent again.");
  let form: URLSearchParams;
  try {
    form = new URLSearchParams(await readText(req));
  } catch {
    return errorPage("INVALID_REQUEST", "The form could not be read.");
  }
  if (!constantTimeEqual(form.get("csrf") ?? "", csrfToken(handle, binding))) {
    return errorPage("STATE_MISMATCH", "The form expired or did not come from this page. Reload the authorization link and try again.");
  }
  const decision = form.get("decision");
  if (decision !== "deny" && decision !== "approve") return errorPage("INVALID_REQUEST", "Choose Approve or Deny.");
  // The first browser to answer owns the request; the provider's callback must come back to it.
  if (!(await gw.store.bindSession(session.session_id, bindingHash(binding)))) {
    return errorPage("STATE_MISMATCH", "This authorization request was already answered in another browser. Ask the agent for a new link.");
  }
  if (decision === "deny") return denySession(gw, session, "access_denied");

  const record = await gw.store.getProvider(session.provider_id);
  if (!record) return errorPage("NOT_FOUND", `The provider '${session.provider_id}' is no longer configured.`);
  await audit(gw, "consent.approved", { client_id: session.client_id, agent_id: session.agent_id, provider_id: session.provider_id });
  return redirect(await upstreamAuthorizeUrl(gw, session, record));
}

/**
 * Marks the session denied (the agent will get 403 USER_DENIED at /ath/token) and sends the person back to the
 * agent with `error=…`, or shows the denied page when the agent registered no redirect URI.
 */
export async function denySession(gw: Gateway, session: SessionRecord, error: string): Promise<Response> {
  if (!(await gw.store.markSessionDenied(session.session_id))) return errorPage("SESSION_NOT_FOUND");
  await audit(gw, "consent.denied", { client_id: session.client_id, agent_id: session.agent_id, provider_id: session.provider_id, data: { error } });
  if (session.user_redirect_uri) {
    const url = new URL(session.user_redirect_uri);
    url.searchParams.set("error", error);
    url.searchParams.set("state", session.agent_state);
    url.searchParams.set("ath_session_id", session.session_id);
    return redirect(url.href);
  }
  const provider = await gw.store.getProvider(session.provider_id);
  return htmlResponse(renderDeniedPage({ providerName: provider?.config.display_name ?? session.provider_id }));
}

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

/** Why a session cannot proceed in the browser, or null. */
export function sessionProblem(gw: Gateway, session: SessionRecord | null): ErrorCode | null {
  if (!session || session.status !== "pending") return "SESSION_NOT_FOUND";
  if (session.expires_at <= gw.now()) return "SESSION_EXPIRED";
  return null;
}
