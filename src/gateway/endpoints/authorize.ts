/** POST /ath/authorize — Phase B step 1: check the agent and its request, open a single-use consent session. */
import { AthError, AuthorizationRequest, PATHS, type AuthorizationResponse } from "../../protocol/index.ts";
import { approvalFor, attest, requireAgent, requireApproved } from "../domain/agents.ts";
import type { Call } from "../context.ts";
import { findProvider } from "../domain/providers.ts";
import { openSession } from "../domain/sessions.ts";
import { parseWith, readObject } from "../http/request.ts";
import { withAppDefaults } from "./native.ts";
import { json } from "../http/response.ts";
import { matchRedirectUri } from "../rules/redirect-uri.ts";
import { unapprovedScopes } from "../rules/scopes.ts";

export async function authorize(call: Call): Promise<Response> {
  const { gw } = call;
  const body = parseWith(AuthorizationRequest, withAppDefaults(gw, await readObject(call, { form: false })));
  const agent = await requireAgent(gw, body.client_id);
  await call.identify({ client_id: agent.client_id });
  requireApproved(gw, agent);
  await attest(gw, body.agent_attestation, agent, gw.opts.baseUrl);

  const approval = approvalFor(agent, body.provider_id);
  const provider = await findProvider(gw, body.provider_id);
  if (!approval || !provider) {
    throw new AthError("PROVIDER_NOT_APPROVED", undefined, { provider_id: body.provider_id });
  }
  await call.identify({ provider_id: provider.provider_id });
  const unapproved = unapprovedScopes(approval.approved_scopes, body.scopes);
  if (unapproved.length > 0) {
    throw new AthError("SCOPE_NOT_APPROVED", undefined, { provider_id: body.provider_id, unapproved_scopes: unapproved });
  }
  if (!matchRedirectUri(agent.redirect_uris, body.user_redirect_uri)) {
    const message = agent.redirect_uris?.length
      ? "user_redirect_uri does not match a registered redirect URI"
      : "user_redirect_uri is not allowed: the agent registered no redirect_uris";
    throw new AthError("INVALID_REQUEST", message, { field: "user_redirect_uri" });
  }

  const session = await openSession(gw, {
    clientId: agent.client_id,
    agentId: agent.agent_id,
    providerId: body.provider_id,
    scopes: body.scopes,
    state: body.state,
    redirectUri: body.user_redirect_uri ?? null,
    resource: body.resource ?? null,
  });

  // The PKCE parameters appear in the URL as the spec requires; the same challenge goes to the provider.
  const url = new URL(`${gw.opts.baseUrl}${PATHS.consent}/${session.handle}`);
  url.searchParams.set("code_challenge", session.code_challenge);
  url.searchParams.set("code_challenge_method", "S256");
  // The resource goes to the provider too; clients (the official SDK) expect to see it in the URL they open.
  if (body.resource) url.searchParams.set("resource", body.resource);
  const res: AuthorizationResponse = { authorization_url: url.href, ath_session_id: session.session_id };
  return json(res);
}
