/**
 * An MCP call as rules see it (DESIGN §18): the JSON-RPC method, the name it is about — the tool (tools/call), the
 * prompt (prompts/get) or the resource URI (resources/read, subscribe, unsubscribe) — and its arguments; and the rule
 * grammar `MCP <method> [<name glob>]` (`MCP tools/call send_email`, `MCP tools/call *`, `MCP resources/read **`),
 * matched with the path glob's matcher, names split on `/`. Pure: no I/O.
 */
import { matchSegments } from "./glob.ts";

/** One JSON-RPC request or notification, as policy sees it. */
export interface McpCall {
  method: string;
  /** The tool, prompt or resource URI; null for other methods (or when the name is not a string). */
  name: string | null;
  /** The call's `arguments`, read strictly (rules/strict-json.ts); undefined when it sent none. */
  arguments: unknown;
}

/**
 * Methods every token may send (DESIGN §18 "Pinned"): the session's housekeeping and the tool list — and their 2026-07-28
 * counterparts (DESIGN §21): `server/discover` (what `initialize` answered) and `subscriptions/listen` (the stream a
 * 2025 GET opens, which no rule judges either).
 */
const FREE = new Set(["initialize", "ping", "tools/list", "server/discover", "subscriptions/listen"]);

/** Whether the method needs no scope and no rule judges it (notifications included). */
export function isFreeMethod(method: string): boolean {
  return FREE.has(method) || method.startsWith("notifications/");
}

/** The call's match key, as rules are written: `MCP tools/call send_email`. */
export function matchKey(call: McpCall): string {
  return call.name === null ? `MCP ${call.method}` : `MCP ${call.method} ${call.name}`;
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

/** Whether any of `rules` matches the call. */
export function anyMcpRuleMatches(rules: readonly string[], call: McpCall): boolean {
  for (const rule of rules) if (mcpRuleMatches(rule, call)) return true;
  return false;
}

/** Whether a provider's `scope_rules` speak MCP at all: its HTTP rules (`GET /…`) never judge an MCP call. */
export function hasMcpScopeRules(rules: Readonly<Record<string, readonly string[]>> | undefined): boolean {
  return rules !== undefined && Object.values(rules).some((list) => list.some((r) => r.startsWith("MCP ")));
}

/** The call a JSON-RPC method and params name. */
export function callOf(method: string, params: unknown): McpCall {
  const p = params !== null && typeof params === "object" && !Array.isArray(params) ? (params as Record<string, unknown>) : {};
  let name: unknown = null;
  if (method === "tools/call" || method === "prompts/get") name = p.name;
  else if (method === "resources/read" || method === "resources/subscribe" || method === "resources/unsubscribe") name = p.uri;
  return { method, name: typeof name === "string" ? name : null, arguments: p.arguments };
}
