/**
 * ANY /ath/proxy/{provider_id}/{path} (and, in native mode, ANY /api/{path}) — the agent's calls to the provider API, with the ATH token swapped for the
 * upstream token. Bodies stream both ways; the upstream token never reaches the agent. Every rule reads one canonical
 * request (DESIGN §16), in this order: scope_rules, approval_rules, policy, budgets — then the call is sent, once.
 */
import { AthError, HEADERS, PROXY_METHODS, type ApprovalRule } from "../../protocol/index.ts";
import type { Call } from "../context.ts";
import { approvalRuleFor, MAX_APPROVAL_BODY_DEFAULT, passApproval } from "../domain/approvals.ts";
import { applyBudgets, matchingBudgets } from "../domain/budgets.ts";
import { conditionInput, decidePolicy, policyDenied } from "../domain/policy.ts";
import { audit, auditProxyCall } from "../domain/audit.ts";
import { requestDigest } from "../rules/request-digest.ts";
import { currentAccess, refreshAfterRejection } from "../domain/grants.ts";
import { requireProvider } from "../domain/providers.ts";
import { requireCallerToken, requireNotRevoked } from "../domain/tokens.ts";
import { readBounded } from "../http/body.ts";
import { callerCredentials } from "../http/request.ts";
import { apiHeaders } from "../oauth/quirks.ts";
import { agentResponseHeaders, filterResponseHeaders, upstreamRequestHeaders } from "./headers.ts";
import { prepareBody, send, type PreparedBody } from "./relay.ts";
import { allowedByScopeRules, ANY_SCOPE } from "./scope-rules.ts";
import { requestLine } from "./request-line.ts";
import { boundHeaders } from "../rules/canonical-request.ts";

/** On answers to calls a budget counted: the calls left in the tightest matching budget's window (DESIGN §16). */
const BUDGET_REMAINING = "ath-budget-remaining";

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
  const caller = callerCredentials(req, gw.opts.baseUrl);
  const { token, agent } = await requireCallerToken(gw, caller, providerId);
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
  // The one canonical request every rule reads (DESIGN §16): an ambiguous path is refused here, nothing forwarded.
  const line = requestLine(record.config as typeof record.config & { api_base_url: string }, req.method, rawPath, call.search);
  const { canonical, target } = line;
  const rules = record.config.scope_rules;
  if (rules ? !line.allows(token.scopes) : gw.opts.strictScopes) {
    // the scopes that would allow it, so the agent knows what to ask for
    const needed = rules ? Object.keys(rules).filter((scope) => scope !== ANY_SCOPE && allowedByScopeRules(rules, [scope], canonical)) : [];
    const need = needed.length === 0 ? "" : `; it needs ${needed.length === 1 ? "the scope" : "one of the scopes"} ${needed.join(", ")}`;
    throw new AthError("SCOPE_NOT_APPROVED", `No scope of this token allows ${req.method} ${canonical.literal}${need}`, { scopes: token.scopes, needed_scopes: needed });
  }
  if (!token.grant_id) throw new AthError("TOKEN_EXPIRED", "This token has no upstream grant; run authorize again", { reason: "upstream_grant_revoked" });

  // An authenticated, allowed request may wait on its upstream (and stream long bodies) past the listener's 10 s idle
  // timeout, which is for everyone else (DESIGN §14); Bun's longest.
  gw.extendTimeout?.(req, AUTHENTICATED_PROXY_TIMEOUT_S);
  const headers = upstreamRequestHeaders(req.headers, apiHeaders(record.config));
  // The body is read whole (bounded) only when a rule needs it — an approval to digest and show it, a condition to
  // parse it — and then at most once; else it streams.
  let whole: Uint8Array | null = null;
  const readWhole = async (limit: number, tooLarge: () => AthError): Promise<Uint8Array> => {
    if (whole === null) whole = await readBounded(req.body, req.headers.get("content-length"), limit, tooLarge);
    else if (whole.byteLength > limit) throw tooLarge();
    return whole;
  };
  // Approval rules (DESIGN §15), after scope_rules; then policy rules (§16), whose `approve` asks the same way.
  let rule: ApprovalRule | null = approvalRuleFor(record.config, agent, canonical);
  if (rule === null && (record.config.policy || agent?.policy)) {
    const hit = await decidePolicy(record.config, agent, canonical, conditionInput(gw, { token, request: canonical, headers, contentLength: req.headers.get("content-length"), readWhole, whole: () => whole }));
    if (hit?.rule.action === "deny") {
      await audit(gw, "policy.denied", { client_id: token.client_id, agent_id: token.agent_id, provider_id: providerId, user_id: token.user_id, data: { method: canonical.method, path: canonical.literal, rule: { from: hit.from, index: hit.index } } });
      throw policyDenied(hit);
    }
    if (hit?.rule.action === "approve") rule = hit.rule;
  }
  const approve = async (r: ApprovalRule): Promise<void> => {
    const limit = Math.min(gw.opts.maxApprovalBody ?? MAX_APPROVAL_BODY_DEFAULT, gw.opts.maxProxyBody ?? Infinity);
    const bytes = await readWhole(limit, () => new AthError("PAYLOAD_TOO_LARGE", `A request that needs a person's approval may carry at most ${limit} bytes`, { limit }));
    await passApproval(gw, r, {
      token,
      request: { ...canonical, headers: boundHeaders(headers), body: bytes },
      approvalId: req.headers.get(HEADERS.approval),
    });
  };
  // Budgets (DESIGN §16) are counted first, conditionally, and given back if the call is not sent after all (a person
  // has not approved it): so a spent `deny` budget refuses before an approval is used.
  let budgetRemaining: number | null = null;
  const budgets = record.config.budgets || agent?.budgets ? matchingBudgets(record.config, agent, canonical, token, gw.now()) : [];
  if (budgets.length) ({ remaining: budgetRemaining, approval: rule } = await applyBudgets(gw, budgets, token, rule, approve));
  else if (rule) await approve(rule);
  const read = whole as Uint8Array | null;
  const body: PreparedBody =
    read !== null
      ? { data: read.byteLength ? (read.buffer.slice(read.byteOffset, read.byteOffset + read.byteLength) as ArrayBuffer) : null, replayable: true }
      : await prepareBody(req, gw.opts.maxProxyBody);
  let access: Awaited<ReturnType<typeof currentAccess>>;
  try {
    access = await currentAccess(gw, token.grant_id);
  } catch (err) {
    // A revocation drops the token, then its grant: a request that read the token just before its revocation reached
    // this instance finds the grant gone. Ask about the token again, so the answer names what happened (TOKEN_REVOKED).
    if (err instanceof AthError && err.details?.reason === "upstream_grant_revoked") await requireNotRevoked(gw, caller.token!);
    throw err;
  }
  let res = await send(gw, providerId, req.method, target, headers, body, access);
  if (res.status === 401 && access.canRefresh) {
    if (body.replayable && !rule) {
      await res.body?.cancel();
      access = await refreshAfterRejection(gw, token.grant_id, access.version);
      res = await send(gw, providerId, req.method, target, headers, body, access);
    } else if (rule) {
      // Sent at most once (DESIGN §16): an approved request is not sent again — the 401 is relayed, and the grant is
      // refreshed for later calls (a failed refresh says nothing this answer must carry).
      await refreshAfterRejection(gw, token.grant_id, access.version).catch(() => undefined);
    }
  }
  if (res.status < 200 || res.status > 599) {
    // Not an HTTP status a Response can carry (Bun's fetch passes 0–999 through): the upstream is broken, not the agent.
    await res.body?.cancel();
    throw new AthError("UPSTREAM_UNAVAILABLE", `The provider API answered with an invalid HTTP status (${res.status})`, { reason: "invalid_status", status: res.status });
  }
  if (res.status >= 400) {
    await audit(gw, "proxy.upstream_error", { client_id: token.client_id, provider_id: providerId, data: { status: res.status, method: req.method, path: canonical.literal } });
  }
  // Evidence (DESIGN §20): the call is audited once its status is known — never its bodies; queued, off the hot path.
  auditProxyCall(gw, token, {
    method: canonical.method,
    path: canonical.literal,
    status: res.status,
    ...(rule ? { request_digest: requestDigest({ ...canonical, headers: boundHeaders(headers), body: read ?? new Uint8Array(0) }) } : {}),
  });
  return answerOf(res, budgetRemaining);
}

/**
 * The upstream's answer as the agent's: its headers filtered in place and its body passed through as it streams, not
 * copied into a second Response per request (docs/performance-measured.md). A response whose headers cannot be
 * changed (immutable) is copied instead.
 */
function answerOf(res: Response, budgetRemaining: number | null): Response {
  try {
    filterResponseHeaders(res.headers);
    if (budgetRemaining !== null) res.headers.set(BUDGET_REMAINING, String(budgetRemaining));
    return res;
  } catch {
    const answer = agentResponseHeaders(res.headers);
    if (budgetRemaining !== null) answer[BUDGET_REMAINING] = String(budgetRemaining);
    return new Response(res.body, { status: res.status, statusText: res.statusText, headers: answer });
  }
}
