/**
 * The call decision (DESIGN §16, §18) — one for every door: /ath/proxy and native /api (HTTP), /mcp/{id} (JSON-RPC)
 * and the doors built on them. A door parses its own wire into a `CallSubject`, then asks here, in §16's order:
 * scope_rules → approval_rules → policy → budgets. `decideCall` only reads (the body at most once, only when a rule
 * needs it) and decides; `passCall` does what the decision needs done — audits a refusal, counts the budgets, asks
 * for or spends a person's approval — and says how the call may be sent. The send itself is proxy/relay.ts's
 * `sendOnce`, the one place that knows the 401 rule, the status check and the budget header.
 */
import { AthError, type ApprovalRule, type ProviderConfig } from "../../protocol/index.ts";
import type { AgentRecord, TokenRecord } from "../../store/types.ts";
import type { Gateway } from "../context.ts";
import { anyRuleMatches, boundHeaders, mcpCanonicalRequest, type CanonicalRequest, type CanonicalWithContent, type RuleMode } from "../rules/canonical-request.ts";
import { compileCondition, conditionKind } from "../rules/conditions.ts";
import { anyMcpRuleMatches, hasMcpScopeRules, isFreeMethod, matchKey, type McpCall } from "../rules/mcp-call.ts";
import { requestDigest } from "../rules/request-digest.ts";
import { allowedByScopeRules, ANY_SCOPE } from "../rules/scope-rules.ts";
import { approvalRuleFor, MAX_APPROVAL_BODY_DEFAULT, passApproval, passResend, passRetry } from "./approvals.ts";
import { audit } from "./audit.ts";
import { applyBudgets, budgetsMatching, type BudgetHit } from "./budgets.ts";
import { shareHit } from "./delegation-budget.ts";
import { decidePolicy, httpConditionInput, MAX_POLICY_BODY_DEFAULT, mcpConditionInput, policyDenied, type Matches, type PolicyHit, type RequestBody } from "./policy.ts";

/** What is being called: an HTTP request (canonical) or an MCP call. */
export type CallSubject = HttpSubject | McpSubject;

export interface HttpSubject {
  kind: "http";
  canonical: CanonicalRequest;
  /** Whether the provider's scope_rules let a token with `scopes` make this request (undefined: it declares none). */
  allows(scopes: readonly string[]): boolean | undefined;
  /** The headers to be forwarded (lower-case names): conditions read them, an approval binds the bound ones. */
  headers: Readonly<Record<string, string>>;
  body: RequestBody;
}

export interface McpSubject {
  kind: "mcp";
  call: McpCall;
  /** The bytes of `params.arguments` exactly as sent (empty when it sent none): what an approval binds. */
  argumentBytes: Uint8Array;
}

/** Who calls whom: the provider's configuration, the calling agent (or MCP client) and its token. */
export interface Caller {
  config: ProviderConfig;
  agent: AgentRecord;
  token: TokenRecord;
}

export type Decision =
  /** No scope of the token allows it; `needed`: the provider's scopes that would (none: no scope of it does). */
  | { kind: "scope"; needed: string[]; message: string }
  /** A policy rule refuses it. */
  | { kind: "deny"; hit: PolicyHit }
  /** It may be sent — once a person approved it when `approval` is set; `budgets` count it when it is. */
  | { kind: "send"; approval: ApprovalRule | null; budgets: BudgetHit[] };

/**
 * The decision on one call, in DESIGN §16's order. A promise only when a policy is consulted (a condition may read the
 * body); a call no policy judges — most — is decided without one.
 */
export function decideCall(gw: Gateway, c: Caller, subject: CallSubject): Decision | Promise<Decision> {
  const scope = subject.kind === "http" ? httpScope(gw, c, subject) : mcpScope(gw, c, subject.call);
  if (scope) return scope;
  // Nothing configured that could judge it — no approval rule, policy, budget or delegated share (most calls): the one
  // plain decision, no matcher made (sendDecision's answer for them).
  if (!c.config.approval_rules && !c.agent.approval_rules && !c.config.policy && !c.agent.policy && !c.config.budgets && !c.agent.budgets && c.token.delegation?.budget == null) return SEND_PLAIN;
  const matches = matcher(subject);
  const free = subject.kind === "mcp" && isFreeMethod(subject.call.method);
  const approval = free ? null : approvalRuleFor(c.config, c.agent, (m) => matches(m, "either"));
  if (!free && approval === null && (c.config.policy || c.agent.policy)) return withPolicy(gw, c, subject, matches);
  return sendDecision(gw, c, matches, approval, free);
}

/**
 * How a call names the approval it is sent under: an id the client sent (HTTP's X-ATH-Approval), a resend (MCP's 2025
 * wire: the same call again), or a multi-round-trip retry (MCP's 2026 wire, DESIGN §21): the approval its sealed
 * `requestState` names — opened and bound to this caller by the door — or null when it carried none of ath's.
 */
export type ApprovalClaim = { id: string | null } | "resend" | { state: StateClaim | null };

/** What an opened `ath1.` requestState claims (mcp/request-state.ts seals and opens it). */
export interface StateClaim {
  approvalId: string;
  /** The request digest the approval was asked for (§16): a retry whose digest differs is a changed request. */
  digest: string;
}

export interface Passed {
  /** The rule it is sent under: then it is sent at most once (DESIGN §16). */
  approval: ApprovalRule | null;
  /** The digest the approval was made for (the 403's, the audit record's). */
  digest: string | null;
  /** The calls left in the tightest budget that counted it; null when none did. */
  remaining: number | null;
  /** Gives the budgets' counts back, once: the door calls it when the call was not sent after all (relay `notSent`). */
  unsent: () => void;
}

/**
 * Does what a decision needs done before the call may be sent: a `deny` is audited and thrown (403 POLICY_DENIED);
 * a `send` has its budgets counted and its approval asked for or spent (429 BUDGET_EXHAUSTED, 403 APPROVAL_REQUIRED /
 * APPROVAL_DENIED are thrown; counts are given back when it is not sent). `scope` decisions are the door's to answer.
 */
export function passCall(gw: Gateway, c: Caller, subject: CallSubject, decision: Exclude<Decision, { kind: "scope" }>, claim: ApprovalClaim): Passed | Promise<Passed> {
  // nothing to count or ask for: no promise
  if (decision.kind === "send" && decision.approval === null && decision.budgets.length === 0) return PLAIN;
  return passWith(gw, c, subject, decision, claim);
}

/**
 * Whether `tools/list` shows a tool (DESIGN §18): hidden only when every call of it is refused whatever its arguments —
 * no scope of the provider allows it, or a `deny` policy holds unconditionally (no `when`, or a `when` that does not
 * read the arguments and holds) before any rule that could decide otherwise. A tool the token lacks scope for stays
 * (calling it gets the step-up 403), as does one that needs approval.
 */
export function listable(gw: Gateway, c: Caller, tool: string): boolean {
  const call: McpCall = { method: "tools/call", name: tool, arguments: undefined };
  const scope = mcpScope(gw, c, call);
  if (scope) return scope.needed.length > 0;
  if (approvalRuleFor(c.config, c.agent, (m) => anyMcpRuleMatches(m, call))) return true;
  for (const rules of [c.config.policy, c.agent.policy]) {
    for (const rule of rules ?? []) {
      if (!anyMcpRuleMatches(rule.match, call)) continue;
      if (rule.when === undefined) return rule.action !== "deny";
      const condition = compileCondition(rule.when, conditionKind(rule.match));
      if (condition.readsArguments) return true; // the arguments decide: the tool may be callable
      try {
        const input = { mcp: { method: call.method, tool, arguments: {} }, agent: { id: c.token.agent_id, client_id: c.token.client_id }, user: { id: c.token.user_id }, provider: { id: c.token.provider_id }, token: { scopes: c.token.scopes }, now: new Date(gw.now()) };
        if (!condition.evaluate(input)) continue;
      } catch {
        if (rule.action === "allow") continue;
      }
      return rule.action !== "deny";
    }
  }
  return true;
}

/** The call as audit records and the approval page name it. */
export function describe(subject: CallSubject): { method: string; path: string } {
  return subject.kind === "http" ? { method: subject.canonical.method, path: subject.canonical.literal } : { method: "MCP", path: matchKey(subject.call).slice(4) };
}

// internal

const NOTHING_COUNTED = (): void => undefined;

/** What a call no budget counts and no person approves is sent under. */
const PLAIN: Passed = Object.freeze({ approval: null, digest: null, remaining: null, unsent: NOTHING_COUNTED });

async function withPolicy(gw: Gateway, c: Caller, subject: CallSubject, matches: Matches): Promise<Decision> {
  const input = subject.kind === "http" ? httpConditionInput({ token: c.token, ...subject.canonical, headers: subject.headers, body: subject.body }, { now: gw.now(), maxPolicyBody: maxPolicyBody(gw) }) : mcpConditionInput(c.token, subject.call, gw.now());
  const hit = await decidePolicy(c.config, c.agent, matches, input);
  if (hit?.rule.action === "deny") return { kind: "deny", hit };
  return sendDecision(gw, c, matches, hit?.rule.action === "approve" ? hit.rule : null, false);
}

function sendDecision(gw: Gateway, c: Caller, matches: Matches, approval: ApprovalRule | null, free: boolean): Decision {
  const shared = c.token.delegation?.budget != null && !free;
  // no budget and no approval (most calls): the one plain decision, nothing made per call
  if (approval === null && !shared && !c.config.budgets && !c.agent.budgets) return SEND_PLAIN;
  const budgets = c.config.budgets || c.agent.budgets ? budgetsMatching(c.config, c.agent, (m) => matches(m, "either"), c.token, gw.now()) : [];
  // a delegated token's share (DESIGN §23) counts every call it sends, whatever it is
  if (shared) budgets.push(...shareHit(c.token));
  return { kind: "send", approval, budgets };
}

const SEND_PLAIN: Decision = Object.freeze({ kind: "send", approval: null, budgets: Object.freeze([]) as unknown as BudgetHit[] });

async function passWith(gw: Gateway, c: Caller, subject: CallSubject, decision: Exclude<Decision, { kind: "scope" }>, claim: ApprovalClaim): Promise<Passed> {
  const { token } = c;
  if (decision.kind === "deny") {
    await audit(gw, "policy.denied", {
      client_id: token.client_id,
      agent_id: token.agent_id,
      provider_id: token.provider_id,
      user_id: token.user_id,
      data: { ...describe(subject), rule: { from: decision.hit.from, index: decision.hit.index } },
    });
    throw policyDenied(decision.hit);
  }
  let digest: string | null = null;
  const approve = async (rule: ApprovalRule): Promise<void> => {
    const request = await approvalRequest(gw, subject);
    digest = requestDigest(request);
    if (claim === "resend") await passResend(gw, rule, token, request);
    else if ("state" in claim) await passRetry(gw, rule, token, request, claim.state);
    else await passApproval(gw, rule, { token, request, approvalId: claim.id });
  };
  let { approval } = decision;
  let remaining: number | null = null;
  let unsent = NOTHING_COUNTED;
  if (decision.budgets.length) ({ remaining, approval, unsent } = await applyBudgets(gw, decision.budgets, token, approval, approve));
  else if (approval) await approve(approval);
  return { approval, digest, remaining, unsent };
}

type ScopeDecision = Extract<Decision, { kind: "scope" }>;

function httpScope(gw: Gateway, c: Caller, s: HttpSubject): ScopeDecision | null {
  const rules = c.config.scope_rules;
  if (rules ? s.allows(c.token.scopes) : !gw.opts.strictScopes) return null;
  // the scopes that would allow it, so the agent knows what to ask for
  const needed = rules ? Object.keys(rules).filter((scope) => scope !== ANY_SCOPE && allowedByScopeRules(rules, [scope], s.canonical)) : [];
  const need = needed.length === 0 ? "" : `; it needs ${needed.length === 1 ? "the scope" : "one of the scopes"} ${needed.join(", ")}`;
  return { kind: "scope", needed, message: `No scope of this token allows ${s.canonical.method} ${s.canonical.literal}${need}` };
}

/**
 * A provider's MCP rules (`MCP …` entries) judge its MCP calls; its HTTP rules (`GET /…`) never do, so a provider with
 * HTTP rules only (a template made for its REST API) is judged as one without rules.
 */
function mcpScope(gw: Gateway, c: Caller, call: McpCall): ScopeDecision | null {
  if (isFreeMethod(call.method)) return null;
  const rules = c.config.scope_rules;
  if (!hasMcpScopeRules(rules)) {
    return gw.opts.strictScopes ? { kind: "scope", needed: [], message: "This provider declares no MCP scope_rules (--strict-scopes)" } : null;
  }
  const allowing = Object.keys(rules!).filter((scope) => anyMcpRuleMatches(rules![scope]!, call));
  if (allowing.some((s) => c.token.scopes.includes(s))) return null;
  return { kind: "scope", needed: allowing, message: allowing.length ? `This call needs one of the scopes: ${allowing.join(" ")}` : `No scope of this provider allows ${matchKey(call)}` };
}

function matcher(subject: CallSubject): Matches {
  if (subject.kind === "mcp") return (match) => anyMcpRuleMatches(match, subject.call);
  return (match, mode: RuleMode) => anyRuleMatches(match, subject.canonical, mode);
}

/** The request a person approves: the HTTP request's line, bound headers and body (read, bounded), or the MCP call. */
async function approvalRequest(gw: Gateway, s: CallSubject): Promise<CanonicalWithContent> {
  if (s.kind === "mcp") return mcpCanonicalRequest(s.call.method, s.call.name, s.argumentBytes);
  const limit = Math.min(gw.opts.maxApprovalBody ?? MAX_APPROVAL_BODY_DEFAULT, gw.opts.maxProxyBody ?? Infinity);
  const body = await s.body.read(limit, () => new AthError("PAYLOAD_TOO_LARGE", `A request that needs a person's approval may carry at most ${limit} bytes`, { limit }));
  return { ...s.canonical, headers: boundHeaders(s.headers), body };
}

function maxPolicyBody(gw: Gateway): number {
  return Math.min(gw.opts.maxPolicyBody ?? MAX_POLICY_BODY_DEFAULT, gw.opts.maxProxyBody ?? Infinity);
}
