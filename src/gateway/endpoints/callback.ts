/**
 * GET /ath/callback — Phase B step 3: the provider sends the person back. Check the session and the browser
 * binding, exchange the code (server side, PKCE verifier), record the consent (grant sealed, user found, the agent's
 * one-time code minted), then redirect to the agent or show the code.
 */
import { AthError, PATHS } from "../../protocol/index.ts";
import { LONGEST_IDLE_TIMEOUT_S, type Call } from "../context.ts";
import { constantTimeEqual } from "../crypto/secrets.ts";
import { approverCookieAfterConsent } from "../domain/approver-cookie.ts";
import { audit } from "../domain/audit.ts";
import { bindingHash, browserPseudonym, readBinding } from "../domain/browser-binding.ts";
import { openProvider, outbound, requireProvider } from "../domain/providers.ts";
import { pendingByUpstreamState, recordConsent } from "../domain/sessions.ts";
import { redirect } from "../http/response.ts";
import { exchangeCode, upstreamUserId, type UpstreamTokenResponse } from "../oauth/client.ts";
import { htmlResponse, renderCodeResultPage, renderConnectedPage } from "../pages/index.ts";
import { connectionPerson } from "../domain/connections.ts";
import { finishSignin, isSigninState } from "./approvals.ts";
import { denied } from "./consent.ts";

export async function callback(call: Call): Promise<Response> {
  const { gw, req } = call;
  const q = new URLSearchParams(call.search);
  const state = q.get("state");
  // a state with NUL cannot be one the gateway issued (nor be looked up in PostgreSQL)
  if (!state || state.includes("\0")) throw new AthError("STATE_MISMATCH", "The provider's response carries no valid state.");
  // A person proving, at the provider, that they may decide an approval (DESIGN §15)
  if (isSigninState(state)) return finishSignin(call, state);
  const session = await pendingByUpstreamState(gw, state);
  const binding = readBinding(gw, req);
  if (!binding || !session.binding_hash || !constantTimeEqual(bindingHash(binding), session.binding_hash)) {
    await audit(gw, "callback.rejected", { client_id: session.client_id, provider_id: session.provider_id, data: { reason: "binding cookie mismatch" } });
    throw new AthError("STATE_MISMATCH");
  }
  const error = q.get("error");
  if (error) return denied(gw, session, error === "access_denied" ? error : error.slice(0, 64));
  const code = q.get("code");
  if (!code) throw new AthError("INVALID_REQUEST", "The provider's response carries neither a code nor an error.");

  // The code exchange and the userinfo call each wait up to --upstream-timeout: past the listener's 10 s idle timeout.
  gw.extendTimeout?.(req, Math.min(LONGEST_IDLE_TIMEOUT_S, Math.ceil((2 * gw.opts.upstreamTimeoutMs) / 1000) + 10));
  const record = await requireProvider(gw, session.provider_id);
  const provider = await openProvider(gw, record);
  let tokens: UpstreamTokenResponse;
  try {
    const verifier = await gw.sealer.open(session.pkce_verifier_sealed, `session:${session.session_id}:pkce`);
    tokens = await exchangeCode(provider, { code, verifier, redirectUri: gw.opts.baseUrl + PATHS.callback, resource: session.resource }, outbound(gw));
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    await audit(gw, "callback.exchange_failed", { client_id: session.client_id, provider_id: session.provider_id, data: { reason } });
    throw new AthError("OAUTH_ERROR", err instanceof AthError ? err.message : undefined);
  }
  // An ID-JAG's connection (DESIGN §23): the grant is the enterprise person's, whoever the upstream says signed in.
  const person = await connectionPerson(gw, session);
  const userId = person ?? (await upstreamUserId(provider, tokens, outbound(gw))) ?? browserPseudonym(binding);
  const { agentCode, expiresAt, consented } = await recordConsent(gw, session, { tokens, userId });
  // This browser may later approve this user's individual requests (DESIGN §15).
  const headers = { "set-cookie": await approverCookieAfterConsent(gw, req, session.provider_id, userId) };
  if (person !== null) {
    return htmlResponse(renderConnectedPage({ providerName: record.config.display_name, gatewayHost: new URL(gw.opts.baseUrl).host, scopes: consented }), { headers });
  }

  // The gateway's own callback as the agent's redirect URI (the official SDK's and athx's default) means "no agent
  // redirect": sending the browser there would only show a "no longer valid" page (DESIGN §8).
  if (session.user_redirect_uri && session.user_redirect_uri !== gw.opts.baseUrl + PATHS.callback) {
    const url = new URL(session.user_redirect_uri);
    url.searchParams.set("code", agentCode);
    url.searchParams.set("state", session.agent_state);
    url.searchParams.set("ath_session_id", session.session_id);
    return redirect(url.href, 302, headers);
  }
  return htmlResponse(
    renderCodeResultPage({
      providerName: record.config.display_name,
      gatewayHost: new URL(gw.opts.baseUrl).host,
      scopes: consented,
      code: agentCode,
      sessionId: session.session_id,
      command: `ath token --gateway ${gw.opts.baseUrl} --code ${agentCode} --session ${session.session_id}`,
      expiresAt: new Date(expiresAt),
      now: new Date(gw.now()),
    }),
    { headers },
  );
}
