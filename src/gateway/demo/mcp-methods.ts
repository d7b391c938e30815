/**
 * What the sandbox MCP server answers, whatever wire carried the request: the JSON-RPC methods it serves
 * (`initialize`'s answer, `ping`, `tools/list`, `tools/call` over the demo user's notes) as one function from
 * (method, params, the caller's grant) to a result or a JSON-RPC error. The wire — Streamable HTTP with sessions
 * (MCP 2025-11-25, mcp.ts) today, another later — only parses, authenticates and frames.
 */
import type { DemoContext, TokenGrant } from "./context.ts";
import { addNote, deleteNote, listNotes } from "./notes.ts";

/** The MCP revisions the sandbox speaks, newest first (MCP 2025-11-25 "Version negotiation"). */
export const MCP_VERSIONS = ["2025-11-25", "2025-06-18", "2025-03-26"] as const;

/** JSON-RPC 2.0 §5.1 error codes. */
export const RPC = { parseError: -32700, invalidRequest: -32600, methodNotFound: -32601, invalidParams: -32602 } as const;

export type Answer = { result: Record<string, unknown> } | { error: { code: number; message: string } } | { insufficientScope: string };

/** The answer to one request; `initialize` is answered by `initializeResult` (the wire owns sessions). */
export function answer(ctx: DemoContext, grant: TokenGrant, method: string, params: Record<string, unknown>): Answer {
  switch (method) {
    case "ping":
      return { result: {} };
    case "tools/list":
      return { result: { tools: TOOLS.map(({ scope: _scope, run: _run, ...listed }) => listed) } };
    case "tools/call":
      return callTool(ctx, grant, params);
    default:
      return { error: { code: RPC.methodNotFound, message: `the sandbox MCP server has no method ${JSON.stringify(method.slice(0, 100))}` } };
  }
}

/** `initialize`'s result: the client's revision when the sandbox speaks it, else its newest (the client then decides). */
export function initializeResult(asked: unknown): Record<string, unknown> {
  const version = (MCP_VERSIONS as readonly unknown[]).includes(asked) ? (asked as string) : MCP_VERSIONS[0];
  return {
    protocolVersion: version,
    capabilities: { tools: { listChanged: false } },
    serverInfo: { name: "ath-demo-notes", title: "Demo Notes (sandbox MCP server)", version: "1.0.0" },
    instructions: "A sandbox: each signed-in demo user's notes, kept in memory until the gateway stops. list_notes reads them; add_note and delete_note change them.",
  };
}

// internal

interface Tool {
  name: string;
  title: string;
  description: string;
  inputSchema: Record<string, unknown>;
  outputSchema: Record<string, unknown>;
  annotations: Record<string, boolean>;
  /** The scope a call needs (the provider's scope_rules say the same for ath). */
  scope: "notes:read" | "notes:write";
  run(ctx: DemoContext, grant: TokenGrant, args: Record<string, unknown>): { text: string; structured: Record<string, unknown> } | { problem: string };
}

const NOTE_SCHEMA = {
  type: "object",
  properties: { id: { type: "string" }, text: { type: "string" }, created_at: { type: "string", format: "date-time" } },
  required: ["id", "text", "created_at"],
};

const TOOLS: Tool[] = [
  {
    name: "list_notes",
    title: "List notes",
    description: "Lists your demo notes, oldest first.",
    inputSchema: { type: "object", properties: {}, additionalProperties: false },
    outputSchema: { type: "object", properties: { user: { type: "string" }, notes: { type: "array", items: NOTE_SCHEMA } }, required: ["user", "notes"] },
    annotations: { readOnlyHint: true },
    scope: "notes:read",
    run(ctx, grant) {
      const notes = listNotes(ctx, grant.sub, grant.name);
      return { text: notes.map((n) => `${n.id}: ${n.text}`).join("\n"), structured: { user: grant.sub, notes } };
    },
  },
  {
    name: "add_note",
    title: "Add a note",
    description: "Adds a note to your demo notes.",
    inputSchema: { type: "object", properties: { text: { type: "string", description: "The note, 1 to 2000 characters" } }, required: ["text"], additionalProperties: false },
    outputSchema: NOTE_SCHEMA,
    annotations: { readOnlyHint: false, destructiveHint: false },
    scope: "notes:write",
    run(ctx, grant, args) {
      const note = addNote(ctx, grant.sub, grant.name, args.text);
      return "problem" in note ? note : { text: `added ${note.id}`, structured: { ...note } };
    },
  },
  {
    name: "delete_note",
    title: "Delete a note",
    description: "Deletes one of your demo notes by its id.",
    inputSchema: { type: "object", properties: { id: { type: "string", description: "The note's id (n_…)" } }, required: ["id"], additionalProperties: false },
    outputSchema: { type: "object", properties: { deleted: { type: "string" } }, required: ["deleted"] },
    annotations: { readOnlyHint: false, destructiveHint: true },
    scope: "notes:write",
    run(ctx, grant, args) {
      if (typeof args.id !== "string") return { problem: "id must be a string" };
      return deleteNote(ctx, grant.sub, grant.name, args.id) ? { text: `deleted ${args.id}`, structured: { deleted: args.id } } : { problem: `no note ${JSON.stringify(args.id.slice(0, 64))}` };
    },
  },
];

function callTool(ctx: DemoContext, grant: TokenGrant, params: Record<string, unknown>): Answer {
  const tool = TOOLS.find((t) => t.name === params.name);
  // MCP 2025-11-25 "Error handling": an unknown tool is a protocol error; bad arguments are the tool's own error
  if (!tool) return { error: { code: RPC.invalidParams, message: `unknown tool ${JSON.stringify(String(params.name).slice(0, 100))}` } };
  // MCP 2025-11-25 "Scope challenge handling": a token lacking the scope gets 403 insufficient_scope
  if (!grant.scopes.includes(tool.scope)) return { insufficientScope: tool.scope };
  const args = params.arguments ?? {};
  if (typeof args !== "object" || args === null || Array.isArray(args)) return toolError("arguments must be an object");
  const done = tool.run(ctx, grant, args as Record<string, unknown>);
  if ("problem" in done) return toolError(done.problem);
  return { result: { content: [{ type: "text", text: done.text }], structuredContent: done.structured } };
}

function toolError(text: string): Answer {
  return { result: { content: [{ type: "text", text }], isError: true } };
}
