/**
 * The six tools of `ath mcp` (DESIGN §12) as the host sees them — name, description, input and output schemas — and
 * every failure as a tool result (results.ts). Each tool is a thin layer over the flows the CLI commands run
 * (src/agent/flows), in tools/<tool>.ts: parse nothing twice (the SDK checks the input), call the flow, shape its
 * answer. The authorization tools (ath_authorize, ath_token), which wait for a person, are tools/authorize.ts.
 */
import type { CallToolResult, ServerContext } from "@modelcontextprotocol/server";
import {
  AuthorizationOutput,
  AuthorizeToolInput,
  MAX_TOOL_BODY_BYTES,
  ProvidersInput,
  ProvidersOutput,
  RequestOutput,
  RequestToolInput,
  RevokeOutput,
  RevokeToolInput,
  StatusDocument,
  StatusInput,
  TokenToolInput,
} from "../../protocol/mcp-tools.ts";
import { authorizeTool, tokenTool } from "./authorize.ts";
import { forCall, type Call, type ToolContext } from "./context.ts";
import { providers } from "./providers.ts";
import { callApi } from "./request.ts";
import { revokeTool } from "./revoke.ts";
import { statusTool } from "./status.ts";
import { failed } from "../results.ts";

export type { Call, ToolContext };
export { forCall };

export function registerTools(ctx: ToolContext): void {
  const { server } = ctx;
  const guard = <A>(fn: (args: A, call: Call) => Promise<CallToolResult>, provider?: (a: A) => string | undefined) =>
    async (args: A, extra: ServerContext): Promise<CallToolResult> => {
      try {
        return await fn(args, { signal: extra.mcpReq.signal, progress: progressOf(extra) });
      } catch (e) {
        const p = provider?.(args);
        return failed(e, p === undefined ? {} : { provider: p });
      }
    };

  server.registerTool(
    "ath_providers",
    {
      title: "ATH providers",
      description: "The providers this gateway offers, their scopes, what this agent is approved for, and whether it holds a live token for each.",
      inputSchema: ProvidersInput,
      outputSchema: ProvidersOutput,
      annotations: { readOnlyHint: true, openWorldHint: true },
    },
    guard((_args, call) => providers(ctx, call.signal)),
  );
  server.registerTool(
    "ath_authorize",
    {
      title: "Authorize an ATH provider",
      description:
        "Get the person's consent for a provider (registering the agent at the gateway first when needed). Answers `authorized` " +
        "once a token is saved, or `pending` with an authorization_url the person must open: show it to them, then call ath_token.",
      inputSchema: AuthorizeToolInput,
      outputSchema: AuthorizationOutput,
      annotations: { openWorldHint: true },
    },
    guard((args, call) => authorizeTool(ctx, args, call), (a) => a.provider),
  );
  server.registerTool(
    "ath_token",
    {
      title: "Complete an ATH authorization",
      description:
        "Complete a pending authorization: without a code, wait for the person's approval to arrive (on this machine's loopback " +
        "redirect); with `code` (shown by the gateway after ath_authorize {code_on_page:true}), exchange it. The token is saved.",
      inputSchema: TokenToolInput,
      outputSchema: AuthorizationOutput,
      annotations: { openWorldHint: true },
    },
    guard((args, call) => tokenTool(ctx, args, call), (a) => a.provider),
  );
  server.registerTool(
    "ath_request",
    {
      title: "Call a provider API",
      description:
        "Call the provider's API through the ATH gateway with the saved token. Any upstream status is a result; " +
        `bodies over ${MAX_TOOL_BODY_BYTES} bytes are cut (truncated: true), binary ones are base64.`,
      inputSchema: RequestToolInput,
      outputSchema: RequestOutput,
      annotations: { openWorldHint: true },
    },
    guard((args, call) => callApi(ctx, args, call.signal), (a) => a.provider),
  );
  server.registerTool(
    "ath_status",
    {
      title: "ATH status",
      description: "What this agent has saved: gateways, identity, registrations, tokens (masked) with time left, pending authorizations. No network.",
      inputSchema: StatusInput,
      outputSchema: StatusDocument,
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    guard(() => statusTool(ctx)),
  );
  server.registerTool(
    "ath_revoke",
    {
      title: "Revoke an ATH token",
      description: "Revoke the saved token for a provider (or all: true, every saved token at this gateway) at the gateway, and forget it.",
      inputSchema: RevokeToolInput,
      outputSchema: RevokeOutput,
      annotations: { destructiveHint: true, idempotentHint: true, openWorldHint: true },
    },
    guard((args, call) => revokeTool(ctx, args, call.signal), (a) => a.provider),
  );
}

// internal

/** notifications/progress for the call, when the host asked for them with a progressToken. */
function progressOf(extra: ServerContext): () => void {
  const token = extra.mcpReq._meta?.progressToken;
  if (token === undefined) return () => undefined;
  let n = 0;
  return () => {
    n += 1;
    extra.mcpReq.notify({ method: "notifications/progress", params: { progressToken: token, progress: n, message: "waiting for the person's approval" } }).catch(() => undefined);
  };
}

