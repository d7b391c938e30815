/**
 * GET /ath/callback — Phase B step 3: the provider sends the person back. Check the session and the browser
 * binding, exchange the code (server side, PKCE verifier), store the grant sealed, find the user, mint the agent's
 * one-time code, then redirect to the agent or show the code.
 */
import { PATHS, PREFIX } from "../../protocol/index.ts";
import { audit } from "../domain/audit.ts";
import { bindingHash, browserPseudonym, readBinding } from "../domain/browser-binding.ts";
import { denySession, sessionProblem } from "./consent.ts";
import type { Gateway } from "../context.ts";
import { errorPage } from "../pages/errors.ts";
import { createGrant } from "../domain/grants.ts";
import { redirect } from "../http.ts";
import { exchangeCode, upstreamUserId, type UpstreamTokenResponse } from "../oauth/client.ts";
import { htmlResponse, renderCodeResultPage } from "../pages/index.ts";
import { openProvider } from "../domain/providers.ts";
import { parseScopeString } from "../rules/scopes.ts";
import { constantTimeEqual, hashSecret, mintSecret } from "../crypto/secrets.ts";
import { AthError } from "../../protocol/index.ts";

export async function callback(gw: Gateway, req: Request): Promise<Response> {
  const q = new URL(req.url).searchParams;
  const state = q.get("state");
  if (!state) return errorPage("STATE_MISMATCH", "The provider's response carries no state.");
  const session = await gw.store.getSessionByUpstreamState(state);
  const problem = sessionProblem(gw, session);
  if (problem || !session) return errorPage(problem ?? "SESSION_NOT_FOUND");
  const binding = readBinding(gw, req);
  if (!binding || !session.binding_hash || !constantTimeEqual(bindingHash(binding), session.binding_hash)) {
    await audit(gw, "callback.rejected", { client_id: session.client_id, provider_id: session.provider_id, data: { reason: "binding cookie mismatch" } });
    return errorPage("STATE_MISMATCH");
  }
  const error = q.get("error");
  if (error) return denySession(gw, session, error === "access_denied" ? error : error.slice(0, 64));
  const code = q.get("code");
  if (!code) return errorPage("INVALID_REQUEST", "The provider's response carries neither a code nor an error.");

  const record = await gw.store.getProvider(session.provider_id);
  if (!record) return errorPage("NOT_FOUND", `The provider '${session.provider_id}' is no longer configured.`);
  const provider = await openProvider(gw, record);
  let tokens: UpstreamTokenResponse;
  try {
    tokens = await exchangeCode(
      provider,
      {
        code,
        verifier: await gw.sealer.open(session.pkce_verifier_sealed, `session:${session.session_id}:pkce`),
        redirectUri: gw.opts.baseUrl + PATHS.callback,
        resource: session.resource,
      },
      gw.opts.upstreamTimeoutMs,
    );
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    await audit(gw, "callback.exchange_failed", { client_id: session.client_id, provider_id: session.provider_id, data: { reason } });
    return errorPage("OAUTH_ERROR", err instanceof AthError ? err.message : undefined);
  }

  const userId = (await upstreamUserId(provider, tokens, gw.opts.upstreamTimeoutMs)) ?? browserPseudonym(binding);
  const grant = await createGrant(gw, {
    providerId: session.provider_id,
    userId,
    agentId: session.agent_id,
    tokens,
    requestedScopes: session.requested_scopes,
  });
  const agentCode = mintSecret(PREFIX.code);
  const consented = tokens.scope !== undefined ? parseScopeString(tokens.scope) : session.requested_scopes;
  const expiresAt = gw.now() + gw.opts.sessionTtlSeconds * 1000;
  const marked = await gw.store.markSessionConsented(session.session_id, {
    code_hash: hashSecret(agentCode),
    user_id: userId,
    consented_scopes: consented,
    grant_id: grant.grant_id,
    expires_at: expiresAt,
  });
  if (!marked) {
    await gw.store.deleteGrant(grant.grant_id);
    return errorPage("SESSION_NOT_FOUND");
  }
  await audit(gw, "consent.granted", {
    client_id: session.client_id,
    agent_id: session.agent_id,
    provider_id: session.provider_id,
    user_id: userId,
    data: { consented },
  });

  if (session.user_redirect_uri) {
    const url = new URL(session.user_redirect_uri);
    url.searchParams.set("code", agentCode);
    url.searchParams.set("state", session.agent_state);
    url.searchParams.set("ath_session_id", session.session_id);
    return redirect(url.href, 302);
  }
  const gatewayFlag = `--gateway ${gw.opts.baseUrl}`;
  return htmlResponse(
    renderCodeResultPage({
      providerName: record.config.display_name,
      code: agentCode,
      sessionId: session.session_id,
      command: `ath token ${gatewayFlag} --code ${agentCode} --session ${session.session_id}`,
      expiresAt: new Date(expiresAt),
      now: new Date(gw.now()),
    }),
  );
}
