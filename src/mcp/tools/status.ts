/** `ath_status`: what this agent has saved (no network), as `ath status --format json` prints it. */
import type { CallToolResult } from "@modelcontextprotocol/server";
import { status } from "../../agent/flows/status.ts";
import { ok } from "../results.ts";
import type { ToolContext } from "./context.ts";

export async function statusTool(ctx: ToolContext): Promise<CallToolResult> {
  const doc = await status({ target: ctx.target, showSecrets: false }, ctx.agent);
  const tokens = doc.registrations.flatMap((r) => r.tokens.filter((t) => !t.expired).map((t) => t.provider_id));
  const who = doc.identity.agent_id ?? "no identity yet";
  return ok(doc, `${who}: ${doc.registrations.length} registration(s); live tokens: ${tokens.length === 0 ? "none" : tokens.join(", ")}`);
}
