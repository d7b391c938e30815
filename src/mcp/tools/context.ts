/** What every tool of `ath mcp` acts with, and one call's own agent. */
import type { McpServer } from "@modelcontextprotocol/server";
import type { Agent } from "../../agent/flows/agent.ts";
import type { TargetOptions } from "../../agent/target.ts";
import type { Waits } from "../waits.ts";

/** What every tool acts with: the server's agent (one home, key and credentials) and `-g`/`-m`/`-s`. */
export interface ToolContext {
  server: McpServer;
  agent: Agent;
  target: TargetOptions;
  waits: Waits;
}

/** One tool call: its abort signal (the host cancelled, or timed out) and a progress report for long waits. */
export interface Call {
  signal: AbortSignal;
  /** Tells the host the call is still waiting (only when the host gave a progressToken). */
  progress: () => void;
}

/** The tool call's own agent: the server's, with the call's abort signal on every request (a cancelled call stops). */
export function forCall(agent: Agent, signal: AbortSignal): Agent {
  return { ...agent, http: { ...agent.http, signal } };
}
