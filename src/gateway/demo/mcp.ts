/**
 * The sandbox MCP server at /demo/mcp — part of the outside world `ath serve --demo` pretends to be, like the notes
 * API: MCP 2025-11-25 Streamable HTTP ("Transports"), taking only Bearer tokens of the sandbox's own OAuth server.
 * A POST carries one JSON-RPC message: a request is answered as `application/json`, a notification or response with
 * 202; `initialize` opens a session (`Mcp-Session-Id`) bound to the signed-in demo user, which every later request
 * names (missing: 400, unknown or another user's: 404); DELETE ends it; GET offers no stream (405). What the methods
 * answer is mcp-methods.ts's, so another wire can be added beside this one.
 */
import { randomSecret } from "../crypto/secrets.ts";
import type { DemoContext, TokenGrant } from "./context.ts";
import { authenticateBearer, insufficientScope, json, readBody } from "./http.ts";
import { answer, initializeResult, MCP_VERSIONS, RPC } from "./mcp-methods.ts";

const SESSION_HEADER = "mcp-session-id";
const VERSION_HEADER = "mcp-protocol-version";

export async function mcpServer(req: Request, ctx: DemoContext): Promise<Response> {
  // "Security Warning": servers must validate Origin against DNS rebinding
  const origin = req.headers.get("origin");
  if (origin !== null && origin !== new URL(ctx.issuer).origin) return rpcError(403, RPC.invalidRequest, "this Origin may not call the sandbox MCP server");
  if (req.method === "GET") return json({ error: "method_not_allowed", error_description: "the sandbox MCP server offers no GET stream" }, 405, { Allow: "POST, DELETE" });
  if (req.method !== "POST" && req.method !== "DELETE") return json({ error: "method_not_allowed", error_description: `${req.method} is not allowed here` }, 405, { Allow: "POST, DELETE" });
  const grant = authenticateBearer(req, ctx);
  if (grant instanceof Response) return grant;
  const version = req.headers.get(VERSION_HEADER);
  // "Protocol Version Header": an unsupported revision is a 400
  if (version !== null && !(MCP_VERSIONS as readonly string[]).includes(version)) return rpcError(400, RPC.invalidRequest, `unsupported MCP-Protocol-Version ${JSON.stringify(version.slice(0, 40))}`);
  if (req.method === "DELETE") {
    const session = sessionOf(req, ctx, grant);
    if (session instanceof Response) return session;
    ctx.mcpSessions.delete(session);
    return new Response(null, { status: 204 });
  }
  const accept = req.headers.get("accept");
  if (accept !== null && !/application\/json|\*\/\*/i.test(accept)) return rpcError(406, RPC.invalidRequest, "Accept must include application/json");
  const text = await readBody(req);
  if (text === null) return rpcError(413, RPC.invalidRequest, "the message is too large");
  let message: unknown;
  try {
    message = JSON.parse(text);
  } catch {
    return rpcError(400, RPC.parseError, "the body is not JSON");
  }
  return receive(message, req, ctx, grant);
}

// internal

/** One JSON-RPC message (JSON-RPC 2.0 §4; MCP 2025-06-18 dropped batches). */
function receive(message: unknown, req: Request, ctx: DemoContext, grant: TokenGrant): Response {
  if (typeof message !== "object" || message === null || Array.isArray(message) || (message as { jsonrpc?: unknown }).jsonrpc !== "2.0") {
    return rpcError(400, RPC.invalidRequest, "expected one JSON-RPC 2.0 message (batches are not part of MCP 2025-11-25)");
  }
  const m = message as { id?: unknown; method?: unknown; params?: unknown };
  const isRequest = typeof m.method === "string" && (typeof m.id === "string" || typeof m.id === "number");
  if (m.method === "initialize" && isRequest) {
    const params = (typeof m.params === "object" && m.params !== null ? m.params : {}) as { protocolVersion?: unknown };
    const session = randomSecret(16);
    const result = initializeResult(params.protocolVersion);
    ctx.mcpSessions.set(session, { sub: grant.sub }, SESSION_TTL_MS);
    return json({ jsonrpc: "2.0", id: m.id, result }, 200, { "Mcp-Session-Id": session });
  }
  const session = sessionOf(req, ctx, grant);
  if (session instanceof Response) return session;
  ctx.mcpSessions.set(session, { sub: grant.sub }, SESSION_TTL_MS); // sliding
  // a notification, or a response to a request of ours (none are sent): accepted, nothing to answer
  if (!isRequest) {
    const valid = (typeof m.method === "string" && m.id === undefined) || (m.method === undefined && m.id !== undefined);
    return valid ? new Response(null, { status: 202 }) : rpcError(400, RPC.invalidRequest, "not a JSON-RPC request, notification or response");
  }
  if (m.params !== undefined && (typeof m.params !== "object" || m.params === null || Array.isArray(m.params))) {
    return json({ jsonrpc: "2.0", id: m.id, error: { code: RPC.invalidParams, message: "params must be an object" } });
  }
  const a = answer(ctx, grant, m.method as string, (m.params ?? {}) as Record<string, unknown>);
  if ("insufficientScope" in a) return insufficientScope(a.insufficientScope);
  return json({ jsonrpc: "2.0", id: m.id, ...a });
}

/** The request's session: open and the same user's; else the 400 (none named) or 404 (unknown: start again) to send. */
function sessionOf(req: Request, ctx: DemoContext, grant: TokenGrant): string | Response {
  const id = req.headers.get(SESSION_HEADER);
  if (id === null) return rpcError(400, RPC.invalidRequest, "Mcp-Session-Id is required: send initialize first");
  const session = ctx.mcpSessions.get(id);
  // another user's session is as unknown as an expired one
  if (session === undefined || session.sub !== grant.sub) return rpcError(404, RPC.invalidRequest, "no such session: send initialize again");
  return id;
}

/** An HTTP-level refusal with a JSON-RPC error body and no id (the message could not be taken). */
function rpcError(status: number, code: number, message: string): Response {
  return json({ jsonrpc: "2.0", id: null, error: { code, message } }, status);
}

const SESSION_TTL_MS = 3600_000;
