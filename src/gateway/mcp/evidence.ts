/**
 * What the MCP front door records of each JSON-RPC call (DESIGN §18, §20): one `mcp.call` audit event per request
 * (notifications and pings are counted, not audited), its result, and the metrics labels — method names from MCP's
 * own list, tool names bounded per provider so a client cannot mint label values.
 */
import type { TokenRecord } from "../../store/types.ts";
import type { Gateway } from "../context.ts";
import { audit } from "../domain/audit.ts";
import type { Message } from "./jsonrpc.ts";

/** Audit and metrics per call of `messages`, each with `result` (`forwarded`, `refused`, `upstream_401`…). */
export async function note(gw: Gateway, token: TokenRecord, messages: readonly Message[], result: string): Promise<void> {
  for (const m of messages) {
    if (!m.call) continue;
    const method = m.call.method;
    const methodLabel = KNOWN_METHODS.has(method) ? method : method.startsWith("notifications/") ? "notifications" : "other";
    const toolLabel = method === "tools/call" && m.call.name !== null ? labelFor(gw, token.provider_id, m.call.name) : "";
    const data = { method: method.slice(0, 100), tool: m.call.name?.slice(0, 200) ?? null, result, method_label: methodLabel, tool_label: toolLabel };
    if (methodLabel === "notifications" || method === "ping") gw.metrics.event("mcp.call", { provider_id: token.provider_id, data });
    else await audit(gw, "mcp.call", { client_id: token.client_id, agent_id: token.agent_id, provider_id: token.provider_id, user_id: token.user_id, data });
  }
}

// internal

/** Per provider, the tool names metrics label by: the first 100 well-formed ones seen; the rest are `other`. */
const toolLabels = new WeakMap<Gateway, Map<string, Set<string>>>();
const MAX_TOOL_LABELS = 100;
const KNOWN_METHODS = new Set([
  "initialize", "ping", "tools/list", "tools/call", "resources/list", "resources/read", "resources/templates/list", "resources/subscribe",
  "resources/unsubscribe", "prompts/list", "prompts/get", "completion/complete", "logging/setLevel",
  // MCP 2026-07-28 (DESIGN §21)
  "server/discover", "subscriptions/listen",
]);

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
