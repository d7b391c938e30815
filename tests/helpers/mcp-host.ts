/**
 * An MCP host for the `ath mcp` tests: the official SDK's `Client` with `StdioClientTransport` spawning the compiled
 * `dist/ath mcp` in an agent home, optionally declaring URL-mode elicitation with a handler. `call` returns the
 * tool result as the host receives it (the SDK client has already checked `structuredContent` against the tool's
 * output schema); `athError` reads a tool error's code and message.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ElicitRequestSchema, ElicitationCompleteNotificationSchema, type ElicitRequest, type ElicitResult } from "@modelcontextprotocol/sdk/types.js";
import { ensureBinary } from "./cli-binary.ts";

export interface ToolResult {
  isError?: boolean;
  content: { type: string; text?: string }[];
  structuredContent?: Record<string, any>;
  _meta?: Record<string, unknown>;
}

export interface Host {
  client: Client;
  /** Calls a tool; the SDK client validates structuredContent against the tool's output schema. */
  call(name: string, args?: Record<string, unknown>, timeoutMs?: number, onprogress?: (p: { progress: number; message?: string }) => void): Promise<ToolResult>;
  /** What `ath mcp` wrote to stderr so far. */
  stderr(): string;
  /** Elicitation ids the server announced complete (notifications/elicitation/complete). */
  completed: string[];
  /** Closes stdin and waits for the process to end (SIGTERM after 2 s, as the SDK does). */
  close(): Promise<void>;
  pid: number;
}

export interface HostOptions {
  home: string;
  /** `ath mcp` arguments after `mcp` (e.g. ["-g", url]). */
  args?: string[];
  /** Declares URL-mode elicitation and answers each request with this handler. */
  elicit?: (params: ElicitRequest["params"]) => Promise<ElicitResult>;
}

export async function startHost(o: HostOptions): Promise<Host> {
  const transport = new StdioClientTransport({
    command: ensureBinary(),
    args: ["mcp", ...(o.args ?? [])],
    env: { PATH: process.env.PATH ?? "", HOME: o.home, ATH_HOME: o.home, NO_COLOR: "1" },
    stderr: "pipe",
  });
  let err = "";
  transport.stderr?.on("data", (chunk: Buffer) => (err += chunk.toString()));
  const client = new Client(
    { name: "ath-e2e-host", version: "1.0.0" },
    { capabilities: o.elicit === undefined ? {} : { elicitation: { url: {} } } },
  );
  const completed: string[] = [];
  if (o.elicit !== undefined) {
    const handler = o.elicit;
    client.setRequestHandler(ElicitRequestSchema, (req) => handler(req.params));
    client.setNotificationHandler(ElicitationCompleteNotificationSchema, (n) => {
      completed.push(n.params.elicitationId);
    });
  }
  await client.connect(transport);
  const pid = transport.pid ?? 0;
  return {
    client,
    pid,
    completed,
    stderr: () => err,
    call: async (name, args = {}, timeoutMs = 60_000, onprogress) =>
      (await client.callTool({ name, arguments: args }, undefined, { timeout: timeoutMs, ...(onprogress === undefined ? {} : { onprogress }) })) as ToolResult,
    close: () => client.close(),
  };
}

/** The tool error a result carries (`isError: true`): its code and message, from `_meta["ath/error"]`. */
export function athError(r: ToolResult): { code: string; message: string; status?: number; details?: unknown } {
  if (r.isError !== true) throw new Error(`expected a tool error, got ${JSON.stringify(r)}`);
  const e = r._meta?.["ath/error"] as { code: string; message: string } | undefined;
  if (e === undefined) throw new Error(`tool error without ath/error: ${JSON.stringify(r)}`);
  return e;
}

/** The text summary of a result. */
export function textOf(r: ToolResult): string {
  return r.content.map((c) => c.text ?? "").join("\n");
}
