/** `ath_providers`: the providers on offer, with what this agent was approved for and the tokens it holds. */
import { forTerminal } from "../../text/sanitize.ts";
import type { CallToolResult } from "@modelcontextprotocol/server";
import { catalog } from "../../agent/flows/discover.ts";
import { status } from "../../agent/flows/status.ts";
import type { ProvidersOutput } from "../../protocol/mcp-tools.ts";
import { ok } from "../results.ts";
import { forCall, type ToolContext } from "./context.ts";

export async function providers(ctx: ToolContext, signal: AbortSignal): Promise<CallToolResult> {
  const agent = forCall(ctx.agent, signal);
  const target = agent.target(ctx.target);
  const offered = await catalog(target, agent);
  const doc = await status({ target: ctx.target, showSecrets: false }, agent);
  const reg = doc.registrations.find((r) => r.gateway === target.base && r.agent_id === doc.identity.agent_id);
  const out: ProvidersOutput = {
    gateway: target.base,
    agent_id: doc.identity.agent_id,
    registered: reg !== undefined,
    ...(reg === undefined ? {} : { agent_status: reg.agent_status as NonNullable<ProvidersOutput["agent_status"]> }),
    providers: offered.map((p) => {
      const token = reg?.tokens.find((t) => t.provider_id === p.provider_id && !t.expired);
      return {
        ...p,
        approved_scopes: reg?.approved_providers.find((a) => a.provider_id === p.provider_id)?.approved_scopes ?? [],
        token_held: token !== undefined,
        ...(token === undefined ? {} : { token_scopes: token.effective_scopes, token_expires_at: token.expires_at }),
      };
    }),
  };
  // the gateway's words, one line each: none can forge a line of the summary (DESIGN §14)
  const one = (s: string) => forTerminal(s, { multiline: false });
  const lines = out.providers.map((p) => `${one(p.provider_id)} (${one(p.display_name)}): ${p.available_scopes.map(one).join(", ")}${p.token_held ? " — token held" : ""}`);
  return ok(out, `${out.providers.length} provider(s) at ${one(out.gateway)}${out.registered ? "" : " (not registered yet)"}:\n${lines.join("\n")}`);
}
