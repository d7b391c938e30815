/**
 * `ath mcp`: a Model Context Protocol server on stdio (DESIGN §12) exposing the agent's tools (mcp/tools.ts) to an
 * MCP host. It acts as the CLI does — same ATH_HOME, key, credentials and lock — with one agent for its lifetime.
 * stdout carries the protocol and nothing else; warnings go to stderr. It runs until the host closes stdin (or
 * SIGINT/SIGTERM), then cancels the authorizations still waiting, which drops their pending sessions.
 */
import { jsonInert } from "../text/sanitize.ts";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import pkg from "../../package.json" with { type: "json" };
import { loadAgent } from "../agent/flows/agent.ts";
import type { TargetOptions } from "../agent/target.ts";
import { registerTools } from "./tools/index.ts";
import { Waits } from "./waits.ts";

export interface McpOptions {
  target: TargetOptions;
  agentId?: string;
  key?: string;
  /** Where warnings and the server's own messages go (never stdout: it is the protocol's). */
  stderr: (s: string) => void;
}

/** What the host is told about the tools, once, at initialization. */
const INSTRUCTIONS = [
  "These tools give scoped, person-approved access to OAuth APIs through an ATH gateway.",
  "Start with ath_providers. To use a provider, call ath_authorize {provider}: when it answers `pending`, show the person",
  "its authorization_url and then call ath_token {provider}, which waits for their approval. Then call ath_request",
  "{provider, method, path}. Errors carry a code (e.g. TOKEN_REVOKED, NO_TOKEN) and the next step.",
].join(" ");

/** Serves until the host goes away; resolves once everything is closed. */
export async function serveMcp(o: McpOptions): Promise<void> {
  const agent = await loadAgent({
    ...(o.key === undefined ? {} : { key: o.key }),
    ...(o.agentId === undefined ? {} : { agentId: o.agentId }),
    warn: (w) => o.stderr(`ath mcp: warning: ${w}\n`),
  });
  const server = new McpServer({ name: "ath", title: "ATH gateway", version: pkg.version }, { capabilities: { tools: {} }, instructions: INSTRUCTIONS });
  const waits = new Waits();
  registerTools({ server, agent, target: o.target, waits });
  // Every message leaves with its C1/DEL/Cf characters as \uXXXX escapes (C0 are escaped by JSON itself): the values
  // the host parses are unchanged, and nothing a gateway wrote reaches the host's terminal or log raw (DESIGN §14).
  const inertStdout = {
    write: (chunk: string) => process.stdout.write(jsonInert(chunk)),
    once: (event: string, listener: () => void) => process.stdout.once(event, listener),
  } as unknown as NodeJS.WriteStream;
  const transport = new StdioServerTransport(process.stdin, inertStdout);
  const closed = new Promise<void>((resolve) => {
    server.server.onclose = resolve;
    process.stdin.once("end", resolve);
    process.stdin.once("close", resolve);
    // The host stopped reading (EPIPE): nobody is left to answer.
    process.stdout.once("error", () => resolve());
    process.once("SIGINT", resolve);
    process.once("SIGTERM", resolve);
  });
  // A transport error (a line that is not JSON-RPC) is the host's problem, not a reason to stop; nor is a failure
  // nobody awaited (a tool's work is awaited and becomes its result: this is the net under a bug).
  server.server.onerror = (e) => o.stderr(`ath mcp: ${e.message}\n`);
  const unexpected = (e: unknown) => o.stderr(`ath mcp: unexpected error: ${e instanceof Error ? e.message : String(e)}\n`);
  process.on("unhandledRejection", unexpected);
  process.on("uncaughtException", unexpected);
  await server.connect(transport);
  await closed;
  await waits.closeAll();
  await server.close().catch(() => undefined);
}
