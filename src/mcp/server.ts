/**
 * `ath mcp`: a Model Context Protocol server on stdio (DESIGN §12) exposing the agent's tools (mcp/tools.ts) to an
 * MCP host. It acts as the CLI does — same ATH_HOME, key, credentials and lock — with one agent for its lifetime.
 * Both wires (DESIGN §21), on the official SDK 2.x's stdio entry: a host that opens with `initialize` gets a
 * 2025-11-25 session, one that sends 2026-07-28 requests (`server/discover`, `_meta` per request) the stateless wire;
 * the same tools serve both. On 2026, whose servers cannot push requests to the host, a tool that would ask the host to
 * open a page (URL elicitation) hands the URL back in its result instead, as for a host that declared no elicitation.
 * stdout carries the protocol and nothing else; warnings go to stderr. It runs until the host closes stdin (or
 * SIGINT/SIGTERM), then cancels the authorizations still waiting, which drops their pending sessions.
 */
import { Writable } from "node:stream";
import { jsonInert } from "../text/sanitize.ts";
import { McpServer } from "@modelcontextprotocol/server";
import { serveStdio, StdioServerTransport } from "@modelcontextprotocol/server/stdio";
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
  const waits = new Waits();
  // One server per connection (the SDK pins it to the wire the host opened with), plus one it may build to answer a
  // `server/discover` probe: the same tools, the same agent and waits.
  const serverFor = () => {
    const server = new McpServer({ name: "ath", title: "ATH gateway", version: pkg.version }, { capabilities: { tools: {} }, instructions: INSTRUCTIONS });
    registerTools({ server, agent, target: o.target, waits });
    return server;
  };
  // Every message leaves with its C1/DEL/Cf characters as \uXXXX escapes (C0 are escaped by JSON itself): the values
  // the host parses are unchanged, and nothing a gateway wrote reaches the host's terminal or log raw (DESIGN §14).
  const inertStdout = new Writable({
    decodeStrings: false,
    write: (chunk: string | Buffer, _encoding, done) => void process.stdout.write(jsonInert(String(chunk)), (e) => done(e ?? null)),
  });
  const transport = new StdioServerTransport(process.stdin, inertStdout);
  const closed = new Promise<void>((resolve) => {
    process.stdin.once("end", resolve);
    process.stdin.once("close", resolve);
    // The host stopped reading (EPIPE): nobody is left to answer.
    process.stdout.once("error", () => resolve());
    process.once("SIGINT", resolve);
    process.once("SIGTERM", resolve);
  });
  // A transport error (a line that is not JSON-RPC) is the host's problem, not a reason to stop; nor is a failure
  // nobody awaited (a tool's work is awaited and becomes its result: this is the net under a bug).
  const unexpected = (e: unknown) => o.stderr(`ath mcp: unexpected error: ${e instanceof Error ? e.message : String(e)}\n`);
  process.on("unhandledRejection", unexpected);
  process.on("uncaughtException", unexpected);
  const handle = serveStdio(serverFor, { transport, onerror: (e) => o.stderr(`ath mcp: ${e.message}\n`) });
  await closed;
  await waits.closeAll();
  await handle.close().catch(() => undefined);
}
