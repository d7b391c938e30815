/**
 * POST/GET/DELETE /mcp/{provider_id} — the MCP front door's Streamable HTTP endpoint (DESIGN §18). The MCP client's
 * token (ath's, bound to this resource) is checked and swapped for the person's upstream token (refreshed as for
 * APIs); each JSON-RPC message is judged in MCP terms (policy.ts) — a step-up 403, a refusal or an approval as a
 * JSON-RPC error, never forwarded; everything else goes to the upstream MCP server, its answer (JSON or
 * `text/event-stream`) streamed back with `Mcp-Session-Id` and `MCP-Protocol-Version` passed through both ways.
 */
import { AthError } from "../../protocol/index.ts";
import { MCP_REFUSED } from "../../protocol/mcp-front-door.ts";
import type { AgentRecord, TokenRecord } from "../../store/types.ts";
import type { Call, Gateway } from "../context.ts";
import { hashSecret } from "../crypto/secrets.ts";
import { audit } from "../domain/audit.ts";
import { applyBudgets, budgetsMatching, type BudgetHit } from "../domain/budgets.ts";
import { currentAccess, refreshAfterRejection } from "../domain/grants.ts";
import { readBounded } from "../http/body.ts";
import { apiHeaders } from "../oauth/quirks.ts";
import { agentResponseHeaders, upstreamRequestHeaders } from "../proxy/headers.ts";
import { send, type PreparedBody } from "../proxy/relay.ts";
import { passMcpApproval, type McpRefusal, isMcpRefusal } from "./approval.ts";
import { Challenge, insufficientScope, reauthorize, requireMcpToken } from "./access.ts";
import { callOf, decideMcpCall, listable, mcpRuleMatches, type McpCall, type McpVerdict } from "./policy.ts";
import { findMcpProvider } from "./providers.ts";
import { filterToolLists } from "./tools-list.ts";

/** How long an authenticated MCP request may stay idle: a GET stream, a long tool call (Bun's maximum). */
const MCP_IDLE_TIMEOUT_S = 255;

export async function mcp(call: Call): Promise<Response> {
  const { gw, req } = call;
  const providerId = call.params.provider_id!;
  const record = await findMcpProvider(gw, providerId);
  if (!record) throw new AthError("NOT_FOUND", `No MCP server '${providerId}' is fronted here`);
  if (req.method !== "POST" && req.method !== "GET" && req.method !== "DELETE") {
    throw new AthError("METHOD_NOT_ALLOWED", `The MCP endpoint takes POST, GET and DELETE`, undefined, { headers: { allow: "POST, GET, DELETE" } });
  }
  let found: { token: TokenRecord; agent: AgentRecord };
  try {
    found = await requireMcpToken(gw, req, record);
  } catch (err) {
    if (err instanceof Challenge) return err.response();
    throw err;
  }
  const { token, agent } = found;
  await call.identify({ client_id: token.client_id, provider_id: providerId });
  if (!token.grant_id) return reauthorize(gw, record, "The sign-in at the upstream is gone; authorize again").response();
  gw.extendTimeout?.(req, MCP_IDLE_TIMEOUT_S);

  let body: PreparedBody = { data: null, replayable: true };
  let approvalBound = false;
  /** The calls left in the tightest budget that counted this call (ATH-Budget-Remaining), or null when none did. */
  let budgetRemaining: number | null = null;
  const judged: Judged[] = [];
  /** Set when this POST opens a session: whether the client declared URL-mode elicitation. */
  let opening: { urlElicitation: boolean } | null = null;
  if (req.method === "POST") {
    const bytes = await readBounded(req.body, req.headers.get("content-length"), gw.opts.maxProxyBody, () =>
      new AthError("PAYLOAD_TOO_LARGE", `The request body exceeds ${gw.opts.maxProxyBody} bytes (--max-proxy-body)`, { limit: gw.opts.maxProxyBody }),
    );
    let parsed: unknown;
    try {
      parsed = JSON.parse(new TextDecoder().decode(bytes));
    } catch {
      return rpcError(null, -32700, "Parse error: the body is not JSON", undefined, 400);
    }
    const messages = Array.isArray(parsed) ? parsed : [parsed];
    if (messages.length === 0 || messages.some((m) => m === null || typeof m !== "object" || Array.isArray(m))) {
      return rpcError(null, -32600, "Invalid Request: expected a JSON-RPC message", undefined, 400);
    }
    for (const m of messages as Record<string, unknown>[]) {
      if (typeof m.method !== "string") continue; // a response to the server's own request (sampling, elicitation)
      if (m.method === "initialize") opening = { urlElicitation: declaresUrlElicitation(m.params) };
      const c = callOf(m.method, m.params);
      const verdict = decideMcpCall(record.config, agent, token, c, gw.opts.strictScopes, gw.now());
      // Budgets (DESIGN §16) count tools/call and the other named calls their `MCP …` match names
      const budgets = verdict.kind !== "deny" && (record.config.budgets || agent.budgets)
        ? budgetsMatching(record.config, agent, (match) => match.some((r) => mcpRuleMatches(r, c)), token, gw.now())
        : [];
      judged.push({ id: m.id, call: c, verdict, budgets });
    }
    const stepUp = judged.filter((j) => j.verdict.kind === "step_up");
    if (stepUp.length) {
      const scopes = [...new Set(stepUp.flatMap((j) => (j.verdict.kind === "step_up" ? j.verdict.scopes : [])))];
      await note(gw, token, judged, "insufficient_scope");
      return insufficientScope(gw, record, scopes).response();
    }
    const refusals = new Map<Judged, McpRefusal>();
    // A batch (MCP before 2025-06-18) is forwarded whole or not at all: a call that needs a person's approval must come
    // alone, or spending its approval would not mean it was sent.
    // The same for a call a budget counts: a count is a call sent.
    const batchHolds = Array.isArray(parsed) && judged.some((j) => j.verdict.kind === "approve" || j.verdict.kind === "deny" || j.budgets.length > 0);
    for (const j of batchHolds ? [] : judged) {
      if (j.verdict.kind === "deny") refusals.set(j, refusalOf(j.verdict));
      else if (j.verdict.kind === "approve" || j.budgets.length) {
        // Budgets are counted first and given back if the call is not sent (a person has not approved it yet), as for REST.
        try {
          const applied = await applyBudgets(gw, j.budgets, token, j.verdict.kind === "approve" ? j.verdict.rule : null, (rule) => passMcpApproval(gw, rule, token, j.call));
          if (applied.approval) approvalBound = true;
          if (j.budgets.length) budgetRemaining = Math.min(budgetRemaining ?? Infinity, applied.remaining);
        } catch (err) {
          if (isMcpRefusal(err)) refusals.set(j, err);
          else if (err instanceof AthError && err.code === "BUDGET_EXHAUSTED") {
            refusals.set(j, { ath_error: err.code, reason: "budget_exhausted", message: err.message, data: { ...err.details } });
          } else throw err;
        }
      }
    }
    if (batchHolds) {
      for (const j of judged) {
        if (j.verdict.kind === "deny") refusals.set(j, refusalOf(j.verdict));
        else if (j.verdict.kind === "approve") refusals.set(j, { ath_error: "APPROVAL_REQUIRED", reason: "batched", message: "A call that needs a person's approval must be sent alone, not in a batch" });
        else if (j.budgets.length) refusals.set(j, { ath_error: "POLICY_DENIED", reason: "batched", message: "A call a budget counts must be sent alone, not in a batch" });
      }
    }
    if (refusals.size) {
      for (const [j, r] of refusals) await note(gw, token, [j], r.ath_error === "APPROVAL_REQUIRED" ? "approval_required" : "refused");
      const elicit = await urlElicitationDeclared(gw, req, token);
      const errors = judged
        .filter((j) => j.id !== undefined)
        .map((j) => {
          const r = refusals.get(j) ?? { ath_error: "POLICY_DENIED", reason: "another call of this batch was refused", message: "Not sent: another call of this batch was refused" };
          const data = { ath_error: r.ath_error, reason: r.reason, ...r.data };
          // A client that declared URL-mode elicitation is asked to open the approval page as one (MCP 2025-11-25).
          if (elicit && r.ath_error === "APPROVAL_REQUIRED" && r.data?.approval_url) {
            const elicitations = [{ mode: "url", elicitationId: r.data.approval_id, url: r.data.approval_url, message: r.message }];
            return rpcErrorBody(j.id, URL_ELICITATION_REQUIRED, r.message, { ...data, elicitations });
          }
          return rpcErrorBody(j.id, MCP_REFUSED, r.message, data);
        });
      return new Response(JSON.stringify(Array.isArray(parsed) ? errors : errors[0] ?? null), { status: 200, headers: { "content-type": "application/json" } });
    }
    body = { data: bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer, replayable: true };
  }

  const target = new URL(record.config.mcp!.url);
  const headers = upstreamRequestHeaders(req.headers, apiHeaders(record.config));
  const grantId = token.grant_id;
  let res: Response;
  try {
    let access = await currentAccess(gw, grantId);
    res = await send(gw, providerId, req.method, target, headers, body, access);
    // An approved call is sent at most once (DESIGN §16): a 401 refreshes the grant for later calls but is not resent.
    if (res.status === 401 && access.canRefresh) {
      await res.body?.cancel();
      access = await refreshAfterRejection(gw, grantId, access.version);
      if (!approvalBound) res = await send(gw, providerId, req.method, target, headers, body, access);
    }
  } catch (err) {
    // The person's upstream sign-in is dead (refused at refresh): the client must authorize again.
    if (err instanceof AthError && err.details?.reason === "upstream_grant_revoked") {
      await note(gw, token, judged, "upstream_grant_revoked");
      return reauthorize(gw, record, "The sign-in at the upstream ended; authorize again").response();
    }
    throw err;
  }
  if (res.status === 401 && approvalBound) {
    // The approved call was sent once and refused; the grant is refreshed for the next call, which needs a new approval.
    await res.body?.cancel();
    await note(gw, token, judged, "upstream_401");
    const data = { ath_error: "UPSTREAM_UNAVAILABLE", reason: "upstream_rejected_token" };
    const errors = judged.filter((j) => j.id !== undefined).map((j) => rpcErrorBody(j.id, MCP_REFUSED, "The upstream refused the person's token for this approved call; it was not resent", data));
    return new Response(JSON.stringify(errors.length === 1 ? errors[0] : errors), { status: 200, headers: { "content-type": "application/json" } });
  }
  if (res.status === 401) {
    // Refreshed and still refused (or not refreshable): only a new sign-in can help — ath's challenge, not the upstream's.
    await res.body?.cancel();
    await note(gw, token, judged, "upstream_401");
    return reauthorize(gw, record, "The upstream refuses the sign-in; authorize again").response();
  }
  if (res.status < 200 || res.status > 599) {
    await res.body?.cancel();
    throw new AthError("UPSTREAM_UNAVAILABLE", `The MCP server answered with an invalid HTTP status (${res.status})`, { reason: "invalid_status", status: res.status });
  }
  await note(gw, token, judged, res.status < 400 ? "forwarded" : `upstream_${res.status}`);
  const opened = res.headers.get("mcp-session-id");
  if (opening && res.ok && opened) {
    await gw.store.recordMcpSession({ session_key: sessionKey(providerId, opened), client_id: token.client_id, url_elicitation: opening.urlElicitation, created_at: gw.now() });
  }
  const out = agentResponseHeaders(res.headers);
  // The upstream's own challenge would send the client to the upstream's authorization server: ath is its AS.
  delete out["www-authenticate"];
  if (budgetRemaining !== null) out["ath-budget-remaining"] = String(budgetRemaining);
  // tools/list answers only the tools this client may call (tools-list.ts); nothing to filter without rules.
  const listIds = new Set(judged.filter((j) => j.call.method === "tools/list" && j.id !== undefined).map((j) => JSON.stringify(j.id)));
  if (listIds.size && res.ok && (record.config.scope_rules || record.config.policy || agent.policy || gw.opts.strictScopes)) {
    const now = gw.now();
    return filterToolLists(res, listIds, (name) => listable(record.config, agent, token, name, gw.opts.strictScopes, now), out);
  }
  return new Response(res.body, { status: res.status, statusText: res.statusText, headers: out });
}

// internal

function refusalOf(v: Extract<McpVerdict, { kind: "deny" }>): McpRefusal {
  return { ath_error: v.code, reason: v.reason, message: v.reason, ...(v.data ? { data: v.data } : {}) };
}

/** JSON-RPC error code of MCP's URLElicitationRequiredError (2025-11-25). */
const URL_ELICITATION_REQUIRED = -32042;

/** Whether an initialize request's capabilities declare URL-mode elicitation (`elicitation: {url: {}}`). */
function declaresUrlElicitation(params: unknown): boolean {
  const caps = (params as { capabilities?: { elicitation?: { url?: unknown } } } | null)?.capabilities;
  return caps?.elicitation?.url !== undefined && caps.elicitation.url !== null && typeof caps.elicitation.url === "object";
}

/** The upstream session a request names, keyed by provider: what its client declared when it opened it. */
async function urlElicitationDeclared(gw: Gateway, req: Request, token: TokenRecord): Promise<boolean> {
  const sid = req.headers.get("mcp-session-id");
  if (!sid || sid.length > 256) return false;
  const s = await gw.store.getMcpSession(sessionKey(token.provider_id, sid));
  return s !== null && s.client_id === token.client_id && s.url_elicitation;
}

function sessionKey(providerId: string, sessionId: string): string {
  return hashSecret(`${providerId}:${sessionId}`);
}

interface Judged {
  id: unknown;
  call: McpCall;
  verdict: ReturnType<typeof decideMcpCall>;
  /** The budgets that count this call, if it is sent. */
  budgets: BudgetHit[];
}

/** Per provider, the tool names metrics label by: the first 100 well-formed ones seen; the rest are `other`. */
const toolLabels = new WeakMap<Gateway, Map<string, Set<string>>>();
const MAX_TOOL_LABELS = 100;
const KNOWN_METHODS = new Set([
  "initialize", "ping", "tools/list", "tools/call", "resources/list", "resources/read", "resources/templates/list", "resources/subscribe",
  "resources/unsubscribe", "prompts/list", "prompts/get", "completion/complete", "logging/setLevel",
]);

/** Audit and metrics per call: one `mcp.call` event each (notifications are counted, not audited). */
async function note(gw: Gateway, token: TokenRecord, judged: Judged[], result: string): Promise<void> {
  for (const j of judged) {
    const method = j.call.method;
    const methodLabel = KNOWN_METHODS.has(method) ? method : method.startsWith("notifications/") ? "notifications" : "other";
    let toolLabel = "";
    if (method === "tools/call" && j.call.name !== null) toolLabel = labelFor(gw, token.provider_id, j.call.name);
    const data = { method: method.slice(0, 100), tool: j.call.name?.slice(0, 200) ?? null, result, method_label: methodLabel, tool_label: toolLabel };
    if (methodLabel === "notifications" || method === "ping") gw.metrics.event("mcp.call", { provider_id: token.provider_id, data });
    else await audit(gw, "mcp.call", { client_id: token.client_id, agent_id: token.agent_id, provider_id: token.provider_id, user_id: token.user_id, data });
  }
}

function labelFor(gw: Gateway, providerId: string, tool: string): string {
  if (!/^[A-Za-z0-9_.-]{1,64}$/.test(tool)) return "other";
  let perProvider = toolLabels.get(gw);
  if (!perProvider) toolLabels.set(gw, (perProvider = new Map()));
  let seen = perProvider.get(providerId);
  if (!seen) perProvider.set(providerId, (seen = new Set()));
  if (seen.has(tool)) return tool;
  if (seen.size >= MAX_TOOL_LABELS) return "other";
  seen.add(tool);
  return tool;
}

function rpcErrorBody(id: unknown, code: number, message: string, data?: Record<string, unknown>) {
  return { jsonrpc: "2.0", id: id ?? null, error: { code, message, ...(data ? { data } : {}) } };
}

function rpcError(id: unknown, code: number, message: string, data: Record<string, unknown> | undefined, status: number): Response {
  return new Response(JSON.stringify(rpcErrorBody(id, code, message, data)), { status, headers: { "content-type": "application/json" } });
}
