/** `ath_revoke`: revoke the saved token of a provider (or all of this gateway's) at the gateway, and forget it. */
import type { CallToolResult } from "@modelcontextprotocol/server";
import { usageError } from "../../agent/errors.ts";
import { revoke } from "../../agent/flows/revoke.ts";
import type { RevokeToolInput } from "../../protocol/mcp-tools.ts";
import { ok } from "../results.ts";
import { forCall, type ToolContext } from "./context.ts";

export async function revokeTool(ctx: ToolContext, args: RevokeToolInput, signal: AbortSignal): Promise<CallToolResult> {
  if (args.all !== true && args.provider === undefined) throw usageError('ath_revoke needs {"provider": "<id>"} or {"all": true}');
  if (args.all === true && args.provider !== undefined) throw usageError("ath_revoke takes provider or all, not both");
  const agent = forCall(ctx.agent, signal);
  const r = await revoke({ target: agent.target(ctx.target), providers: args.all === true ? "all" : [args.provider as string] }, agent);
  return ok(r, r.revoked.length === 0 ? "no token to revoke" : `revoked: ${r.revoked.join(", ")}`);
}
