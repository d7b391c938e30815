/**
 * ANY /ath/proxy/{provider_id}/{path} (and, in native mode, ANY /api/{path}) — the agent's calls to the provider API, with the ATH token swapped for the
 * upstream token. Bodies stream both ways; the upstream token never reaches the agent.
 */
import { AthError, HEADERS, PROXY_METHODS } from "../../protocol/index.ts";
import type { Call } from "../context.ts";
import { approvalRuleFor, MAX_APPROVAL_BODY_DEFAULT, passApproval } from "../domain/approvals.ts";
import { audit } from "../domain/audit.ts";
import { currentAccess, refreshAfterRejection } from "../domain/grants.ts";
import { requireProvider } from "../domain/providers.ts";
import { requireNotRevoked, requireUsableToken } from "../domain/tokens.ts";
import { readBounded } from "../http/body.ts";
import { bearerToken } from "../http/request.ts";
import { apiHeaders } from "../oauth/quirks.ts";
import { agentResponseHeaders, upstreamRequestHeaders } from "./headers.ts";
import { prepareBody, send, type PreparedBody } from "./relay.ts";
import { allowedByScopeRules } from "./scope-rules.ts";
import { relativePath, upstreamUrl } from "./url.ts";

/** Methods the proxy forwards (the rule and its reason: PROXY_METHODS). */
const FORWARDED_METHODS = PROXY_METHODS;

/** How long an authenticated proxied request may stay idle (Bun's maximum idle timeout). */
const AUTHENTICATED_PROXY_TIMEOUT_S = 255;

export async function proxy(call: Call): Promise<Response> {
  const { gw, req } = call;
  if (!FORWARDED_METHODS.includes(req.method)) {
    throw new AthError("METHOD_NOT_ALLOWED", `The proxy does not forward ${req.method} requests`, undefined, {
      headers: { allow: FORWARDED_METHODS.join(", ") },
    });
  }
  // /api/{path} in native mode is /ath/proxy/{app_id}/{path}.
  const providerId = call.params.provider_id ?? gw.opts.appId!;
  const rawPath = call.params["*"]!;
  const { token, agent } = await requireUsableToken(gw, bearerToken(req));
  if (token.provider_id !== providerId) {
    throw new AthError("PROVIDER_MISMATCH", `This token is for '${token.provider_id}', not '${providerId}'`, { token_provider_id: token.provider_id });
  }
  await call.identify({ client_id: token.client_id, provider_id: providerId });
  const claimedAgent = req.headers.get(HEADERS.agentId);
  if (claimedAgent !== null && claimedAgent !== token.agent_id) throw new AthError("AGENT_IDENTITY_MISMATCH");

  const record = await requireProvider(gw, providerId);
  if (!record.config.api_base_url) {
    throw new AthError("UPSTREAM_UNAVAILABLE", `Provider '${providerId}' has no api_base_url configured`, { provider_id: providerId });
  }
  const target = upstreamUrl(record.config.api_base_url, rawPath, call.search);
  const rules = record.config.scope_rules;
  const path = relativePath(rawPath);
  if (rules ? !allowedByScopeRules(rules, token.scopes, req.method, path) : gw.opts.strictScopes) {
    // the scopes that would allow it, so the agent knows what to ask for
    const needed = rules ? Object.keys(rules).filter((scope) => allowedByScopeRules(rules, [scope], req.method, path)) : [];
    const need = needed.length === 0 ? "" : `; it needs ${needed.length === 1 ? "the scope" : "one of the scopes"} ${needed.join(", ")}`;
    throw new AthError("SCOPE_NOT_APPROVED", `No scope of this token allows ${req.method} ${path}${need}`, { scopes: token.scopes, needed_scopes: needed });
  }
  if (!token.grant_id) throw new AthError("TOKEN_EXPIRED", "This token has no upstream grant; run authorize again", { reason: "upstream_grant_revoked" });

  // An authenticated, allowed request may wait on its upstream (and stream long bodies) past the listener's 10 s idle
  // timeout, which is for everyone else (DESIGN §14); Bun's longest.
  gw.extendTimeout?.(req, AUTHENTICATED_PROXY_TIMEOUT_S);
  const headers = upstreamRequestHeaders(req.headers, apiHeaders(record.config));
  // Approval rules (DESIGN §15), after scope_rules: the body is read whole (bounded) to be digested and shown.
  const rule = approvalRuleFor(record.config, agent, req.method, path);
  let body: PreparedBody;
  if (rule) {
    const limit = Math.min(gw.opts.maxApprovalBody ?? MAX_APPROVAL_BODY_DEFAULT, gw.opts.maxProxyBody ?? Infinity);
    const bytes = await readBounded(req.body, req.headers.get("content-length"), limit, () =>
      new AthError("PAYLOAD_TOO_LARGE", `A request that needs a person's approval may carry at most ${limit} bytes`, { limit }),
    );
    await passApproval(gw, rule, {
      token,
      method: req.method,
      path: "/" + rawPath,
      query: call.search.replace(/^\?/, ""),
      body: bytes,
      contentType: req.headers.get("content-type"),
      approvalId: req.headers.get(HEADERS.approval),
    });
    body = { data: bytes.byteLength ? (bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer) : null, replayable: true };
  } else {
    body = await prepareBody(req, gw.opts.maxProxyBody);
  }
  let access: Awaited<ReturnType<typeof currentAccess>>;
  try {
    access = await currentAccess(gw, token.grant_id);
  } catch (err) {
    // A revocation drops the token, then its grant: a request that read the token just before its revocation reached
    // this instance finds the grant gone. Ask about the token again, so the answer names what happened (TOKEN_REVOKED).
    if (err instanceof AthError && err.details?.reason === "upstream_grant_revoked") await requireNotRevoked(gw, bearerToken(req)!);
    throw err;
  }
  let res = await send(gw, providerId, req.method, target, headers, body, access);
  if (res.status === 401 && access.canRefresh && body.replayable) {
    await res.body?.cancel();
    access = await refreshAfterRejection(gw, token.grant_id, access.version);
    res = await send(gw, providerId, req.method, target, headers, body, access);
  }
  if (res.status < 200 || res.status > 599) {
    // Not an HTTP status a Response can carry (Bun's fetch passes 0–999 through): the upstream is broken, not the agent.
    await res.body?.cancel();
    throw new AthError("UPSTREAM_UNAVAILABLE", `The provider API answered with an invalid HTTP status (${res.status})`, { reason: "invalid_status", status: res.status });
  }
  if (res.status >= 400) {
    await audit(gw, "proxy.upstream_error", { client_id: token.client_id, provider_id: providerId, data: { status: res.status, method: req.method } });
  }
  return new Response(res.body, { status: res.status, statusText: res.statusText, headers: agentResponseHeaders(res.headers) });
}
