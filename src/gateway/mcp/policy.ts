/**
 * Policy in MCP terms (DESIGN §18): what a JSON-RPC message needs before it may reach the upstream MCP server. Rules
 * are the provider's (and agent's) `scope_rules` and `approval_rules` entries written `MCP <method> [<name glob>]` —
 * `MCP tools/call send_email`, `MCP tools/call *`, `MCP resources/read **`. `decideMcpCall` is the one place the
 * matcher runs, in §16's order: scope_rules, approval_rules, then `policy` rules (the provider's, then the agent's) whose
 * `match` is an MCP entry, with CEL over `mcp.method`, `mcp.tool`, `mcp.arguments` and the usual agent, user, provider,
 * token and `now`. An evaluation error counts as holding for `deny`/`approve`, as not for `allow` (fail closed).
 * `listable` asks the same question of a tool before its arguments are known: what `tools/list` may show.
 */
import type { ApprovalRule, PolicyRule, ProviderConfig } from "../../protocol/index.ts";
import type { AgentRecord, TokenRecord } from "../../store/types.ts";
import { compileCondition, conditionKind, type McpConditionInput } from "../rules/conditions.ts";
import { matchSegments } from "../rules/glob.ts";

/** One JSON-RPC request or notification, as policy sees it. */
export interface McpCall {
  method: string;
  /** The tool (tools/call), prompt (prompts/get) or resource URI (resources/read, subscribe); null for other methods. */
  name: string | null;
  arguments: unknown;
}

export type McpVerdict =
  | { kind: "allow" }
  /** 403 insufficient_scope: the scopes that would allow it (the token's own included). */
  | { kind: "step_up"; scopes: string[] }
  /** No scope of the provider allows it at all: a JSON-RPC refusal. */
  | { kind: "deny"; code: "SCOPE_NOT_APPROVED" | "POLICY_DENIED"; reason: string; data?: Record<string, unknown> }
  | { kind: "approve"; rule: ApprovalRule };

/** Methods every token may send (DESIGN §18 "Pinned"): the session's housekeeping and the tool list. */
const FREE = new Set(["initialize", "ping", "tools/list"]);

/** The call's match key, as rules are written: `MCP tools/call send_email`. */
export function matchKey(call: McpCall): string {
  return call.name === null ? `MCP ${call.method}` : `MCP ${call.method} ${call.name}`;
}

/**
 * What one JSON-RPC message needs: scope first (step-up), then approval rules, then policy; `strict` is --strict-scopes,
 * `now` the gateway's clock (CEL's `now`).
 */
export function decideMcpCall(config: ProviderConfig, agent: AgentRecord | null, token: TokenRecord, call: McpCall, strict: boolean, now = Date.now()): McpVerdict {
  const v = decide(config, agent, token, call, strict, now, true);
  return v === UNKNOWN ? { kind: "allow" } : v;
}

/**
 * Whether `tools/list` shows `tool` (DESIGN §18): hidden only when every call of it is refused whatever its arguments —
 * no scope of the provider allows it, or a `deny` policy holds unconditionally (no `when`, or a `when` that does not
 * read `mcp.arguments` and holds) before any rule that could decide otherwise. A tool the token lacks scope for stays
 * (calling it gets the step-up 403), as does one that needs approval.
 */
export function listable(config: ProviderConfig, agent: AgentRecord | null, token: TokenRecord, tool: string, strict: boolean, now = Date.now()): boolean {
  const v = decide(config, agent, token, { method: "tools/call", name: tool, arguments: null }, strict, now, false);
  return v === UNKNOWN || v.kind !== "deny";
}

// internal

/** A rule reads the arguments, which `listable` does not know: the tool may be callable. */
const UNKNOWN = Symbol("unknown");

function decide(config: ProviderConfig, agent: AgentRecord | null, token: TokenRecord, call: McpCall, strict: boolean, now: number, argumentsKnown: boolean): McpVerdict | typeof UNKNOWN {
  if (FREE.has(call.method) || call.method.startsWith("notifications/")) return { kind: "allow" };
  // A provider's MCP rules (`MCP …` entries) judge its MCP calls; its HTTP rules (`GET /…`) never do, so a provider with
  // HTTP rules only (a template made for its REST API) is judged as one without rules.
  const rules = config.scope_rules && Object.values(config.scope_rules).some((list) => list.some((r) => r.startsWith("MCP "))) ? config.scope_rules : undefined;
  if (rules) {
    const allowing = Object.keys(rules).filter((scope) => rules[scope]!.some((rule) => mcpRuleMatches(rule, call)));
    if (!allowing.some((s) => token.scopes.includes(s))) {
      if (allowing.length === 0) return { kind: "deny", code: "SCOPE_NOT_APPROVED", reason: `No scope of this provider allows ${matchKey(call)}` };
      return { kind: "step_up", scopes: [...new Set([...token.scopes, ...allowing])] };
    }
  } else if (strict) {
    return { kind: "deny", code: "SCOPE_NOT_APPROVED", reason: "This provider declares no MCP scope_rules (--strict-scopes)" };
  }
  for (const rule of [...(config.approval_rules ?? []), ...(agent?.approval_rules ?? [])]) {
    if (rule.match.some((m) => mcpRuleMatches(m, call))) return { kind: "approve", rule };
  }
  if (!config.policy && !agent?.policy) return { kind: "allow" };
  let input: McpConditionInput | undefined;
  for (const [from, rules] of [["provider", config.policy], ["agent", agent?.policy]] as const) {
    for (let index = 0; index < (rules ?? []).length; index++) {
      const rule = rules![index]!;
      if (!rule.match.some((m) => mcpRuleMatches(m, call))) continue;
      let failed: string | undefined;
      if (rule.when !== undefined) {
        const condition = compileCondition(rule.when, conditionKind(rule.match));
        if (!argumentsKnown && condition.readsArguments) return UNKNOWN;
        input ??= conditionInput(token, call, now);
        try {
          if (!condition.evaluate(input)) continue;
        } catch (err) {
          if (rule.action === "allow") continue;
          failed = err instanceof Error ? err.message.split("\n")[0]! : String(err);
        }
      }
      return verdictOf(rule, from, index, failed);
    }
  }
  return { kind: "allow" };
}

function verdictOf(rule: PolicyRule, from: "provider" | "agent", index: number, failed: string | undefined): McpVerdict {
  if (rule.action === "allow") return { kind: "allow" };
  if (rule.action === "approve") return { kind: "approve", rule };
  return {
    kind: "deny",
    code: "POLICY_DENIED",
    reason: rule.reason ?? "A policy rule of this gateway refuses this call",
    data: { rule: { from, index }, ...(failed ? { evaluation_error: failed } : {}) },
  };
}

/** What an MCP rule's `when` sees. */
function conditionInput(token: TokenRecord, call: McpCall, now: number): McpConditionInput {
  return {
    mcp: { method: call.method, tool: call.name, arguments: call.arguments ?? {} },
    agent: { id: token.agent_id, client_id: token.client_id },
    user: { id: token.user_id },
    provider: { id: token.provider_id },
    token: { scopes: token.scopes },
    now: new Date(now),
  };
}

/** Whether `rule` (`MCP <method> [<glob>]`) matches; HTTP rules (`GET /…`) never match an MCP call. */
export function mcpRuleMatches(rule: string, call: McpCall): boolean {
  if (!rule.startsWith("MCP ")) return false;
  const rest = rule.slice(4);
  const space = rest.indexOf(" ");
  const method = space < 0 ? rest : rest.slice(0, space);
  if (method !== call.method && method !== "*") return false;
  if (space < 0) return true;
  if (call.name === null) return false;
  const glob = rest.slice(space + 1);
  return matchSegments(glob.split("/").filter(Boolean), call.name.split("/").filter(Boolean));
}

/** The name a method's policy is about: the tool, prompt or resource URI it names. */
export function callOf(method: string, params: unknown): McpCall {
  const p = params !== null && typeof params === "object" && !Array.isArray(params) ? (params as Record<string, unknown>) : {};
  let name: unknown = null;
  if (method === "tools/call" || method === "prompts/get") name = p.name;
  else if (method === "resources/read" || method === "resources/subscribe" || method === "resources/unsubscribe") name = p.uri;
  return { method, name: typeof name === "string" ? name : null, arguments: p.arguments ?? null };
}
