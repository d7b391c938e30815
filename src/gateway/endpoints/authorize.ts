/** POST /ath/authorize — Phase B step 1: check the agent and its request, open a single-use consent session. */
import { AthError, AuthorizationRequest, PATHS, PREFIX, type AuthorizationResponse } from "../../protocol/index.ts";
import { approvalFor, attest, requireAgent, requireApproved } from "../domain/agents.ts";
import { audit } from "../domain/audit.ts";
import type { Call } from "../context.ts";
import { findProvider } from "../domain/providers.ts";
import { parseWith, readObject } from "../http/request.ts";
import { withAppDefaults } from "./native.ts";
import { json } from "../http/response.ts";
import { createPkce } from "../oauth/pkce.ts";
import { matchRedirectUri } from "../rules/redirect-uri.ts";
import { unapprovedScopes } from "../rules/scopes.ts";
import { mintSecret, randomSecret } from "../crypto/secrets.ts";

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

  const now = gw.now();
  const sessionId = mintSecret(PREFIX.session);
  const pkce = createPkce();
  await gw.store.createSession({
    session_id: sessionId,
    handle: randomSecret(),
    client_id: agent.client_id,
    agent_id: agent.agent_id,
    provider_id: body.provider_id,
    requested_scopes: [...new Set(body.scopes)],
    agent_state: body.state,
    user_redirect_uri: body.user_redirect_uri ?? null,
    resource: body.resource ?? null,
    pkce_verifier_sealed: await gw.sealer.seal(pkce.verifier, `session:${sessionId}:pkce`),
    code_challenge: pkce.challenge,
    upstream_state: randomSecret(),
    status: "pending",
    binding_hash: null,
    code_hash: null,
    user_id: null,
    consented_scopes: null,
    grant_id: null,
    created_at: now,
    expires_at: now + gw.opts.sessionTtlSeconds * 1000,
  });
  const session = await gw.store.getSession(sessionId);
  if (!session) throw new TypeError("session vanished after insert");
  await audit(gw, "session.created", { client_id: agent.client_id, agent_id: agent.agent_id, provider_id: body.provider_id, data: { scopes: body.scopes } });

  // The PKCE parameters appear in the URL as the spec requires; the same challenge goes to the provider.
  const url = new URL(`${gw.opts.baseUrl}${PATHS.consent}/${session.handle}`);
  url.searchParams.set("code_challenge", pkce.challenge);
  url.searchParams.set("code_challenge_method", pkce.method);
  // The resource goes to the provider too; clients (the official SDK) expect to see it in the URL they open.
  if (body.resource) url.searchParams.set("resource", body.resource);
  const res: AuthorizationResponse = { authorization_url: url.href, ath_session_id: sessionId };
  return json(res);
}
