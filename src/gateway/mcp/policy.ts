/**
 * Policy in MCP terms (DESIGN §18): what a JSON-RPC message needs before it may reach the upstream MCP server. Rules
 * are the provider's (and agent's) `scope_rules` and `approval_rules` entries written `MCP <method> [<name glob>]` —
 * `MCP tools/call send_email`, `MCP tools/call *`, `MCP resources/read **`. `decideMcpCall` is the one place the
 * matcher runs: CEL policy over `mcp.method`, `mcp.tool`, `mcp.arguments` (DESIGN §16) plugs in here (marked below).
 */
import type { ApprovalRule, ProviderConfig } from "../../protocol/index.ts";
import type { AgentRecord, TokenRecord } from "../../store/types.ts";
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
  | { kind: "deny"; code: "SCOPE_NOT_APPROVED" | "POLICY_DENIED"; reason: string }
  | { kind: "approve"; rule: ApprovalRule };

/** Methods every token may send (DESIGN §18 "Pinned"): the session's housekeeping and the tool list. */
const FREE = new Set(["initialize", "ping", "tools/list"]);

/** The call's match key, as rules are written: `MCP tools/call send_email`. */
export function matchKey(call: McpCall): string {
  return call.name === null ? `MCP ${call.method}` : `MCP ${call.method} ${call.name}`;
}

/** What one JSON-RPC message needs: scope first (step-up), then approval rules; `strict` is --strict-scopes. */
export function decideMcpCall(config: ProviderConfig, agent: AgentRecord | null, token: TokenRecord, call: McpCall, strict: boolean): McpVerdict {
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
  // ── CEL policy (DESIGN §16: `policy` rules over mcp.method, mcp.tool, mcp.arguments) is evaluated here, once it
  // exists: its `deny` → { kind: "deny", code: "POLICY_DENIED", reason }, its `approve` → { kind: "approve", rule }.
  for (const rule of [...(config.approval_rules ?? []), ...(agent?.approval_rules ?? [])]) {
    if (rule.match.some((m) => mcpRuleMatches(m, call))) return { kind: "approve", rule };
  }
  return { kind: "allow" };
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
