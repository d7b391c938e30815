/**
 * A real remote MCP server for the front-door tests: the official SDK's McpServer over its web-standard Streamable
 * HTTP transport (stateful sessions), on a loopback port. Like a hosted MCP server it accepts a request only with a
 * Bearer token the upstream authorization server (oidc-provider) says is active — asked at its introspection endpoint,
 * as its own client — and it records every tool call with the person (`sub`) the token belongs to, so a test sees
 * who reached it, with what, and what never did.
 */
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { z } from "zod";
import type { UpstreamAuth } from "./upstream-auth.ts";

export interface UpstreamToolCall {
  tool: string;
  sub: string;
  args: Record<string, unknown>;
}

export interface UpstreamMcp {
  url: string;
  calls: UpstreamToolCall[];
  /** Every HTTP request: its method, whether its token was active, and the headers the server cares about. */
  requests: { method: string; active: boolean; authorization: string | null; sessionId: string | null; protocolVersion: string | null }[];
  /** Set above 0, every request waits this long before it is handled (a slow server). */
  delayMs: number;
  stop(): Promise<void>;
}

/**
 * The providers-file entry of the mail MCP server above, signed in at `auth` with its `post` client: what every
 * front-door test and transcript configures; `scopes` are the ones `auth` offers. Rules are the caller's to add.
 */
export function mailMcpProvider(auth: UpstreamAuth, upstream: Pick<UpstreamMcp, "url">, scopes: string[]) {
  return {
    display_name: "Mail (MCP)",
    available_scopes: scopes,
    authorize_endpoint: auth.authorizeEndpoint,
    token_endpoint: auth.tokenEndpoint,
    client_id: auth.postClient.client_id,
    client_secret: auth.postClient.client_secret,
    mcp: { url: upstream.url },
  };
}

export async function startUpstreamMcp(auth: UpstreamAuth): Promise<UpstreamMcp> {
  const calls: UpstreamToolCall[] = [];
  const requests: UpstreamMcp["requests"] = [];
  const sessions = new Map<string, WebStandardStreamableHTTPServerTransport>();
  const self = { delayMs: 0 };

  function newServer(): McpServer {
    const server = new McpServer({ name: "upstream-mail", version: "1.0.0" });
    const who = (extra: { authInfo?: { extra?: Record<string, unknown> } }) => String(extra.authInfo?.extra?.sub ?? "unknown");
    server.registerTool("whoami", { description: "The person this token belongs to" }, async (extra) => {
      calls.push({ tool: "whoami", sub: who(extra), args: {} });
      return { content: [{ type: "text", text: who(extra) }] };
    });
    server.registerTool("read_mail", { description: "Read the inbox", inputSchema: { folder: z.string().optional() } }, async (args, extra) => {
      calls.push({ tool: "read_mail", sub: who(extra), args });
      return { content: [{ type: "text", text: `inbox of ${who(extra)}: 1 message` }] };
    });
    server.registerTool("send_email", { description: "Send a mail", inputSchema: { to: z.string(), text: z.string() } }, async (args, extra) => {
      calls.push({ tool: "send_email", sub: who(extra), args });
      return { content: [{ type: "text", text: `sent to ${args.to}` }] };
    });
    server.registerTool("forward_mail", { description: "Forward a mail", inputSchema: { to: z.string() } }, async (args, extra) => {
      calls.push({ tool: "forward_mail", sub: who(extra), args });
      return { content: [{ type: "text", text: `forwarded to ${args.to}` }] };
    });
    server.registerTool("count_mail", { description: "Count the inbox" }, async (extra) => {
      calls.push({ tool: "count_mail", sub: who(extra), args: {} });
      return { content: [{ type: "text", text: "1" }] };
    });
    server.registerTool("delete_all", { description: "Delete every mail" }, async (extra) => {
      calls.push({ tool: "delete_all", sub: who(extra), args: {} });
      return { content: [{ type: "text", text: "deleted" }] };
    });
    return server;
  }

  const http = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 60,
    async fetch(req) {
      if (self.delayMs > 0) await Bun.sleep(self.delayMs);
      const bearer = /^Bearer (.+)$/.exec(req.headers.get("authorization") ?? "")?.[1];
      const intro = bearer === undefined ? { active: false, sub: "" } : await introspect(auth, bearer);
      const sessionId = req.headers.get("mcp-session-id");
      requests.push({ method: req.method, active: intro.active, authorization: req.headers.get("authorization"), sessionId, protocolVersion: req.headers.get("mcp-protocol-version") });
      if (!intro.active) {
        return Response.json({ error: "invalid_token" }, { status: 401, headers: { "www-authenticate": `Bearer error="invalid_token", resource_metadata="${auth.issuer}/.well-known/oauth-protected-resource"` } });
      }
      const authInfo = { token: bearer!, clientId: "upstream", scopes: [], extra: { sub: intro.sub } };
      let transport = sessionId ? sessions.get(sessionId) : undefined;
      if (!transport) {
        if (sessionId) return Response.json({ jsonrpc: "2.0", id: null, error: { code: -32001, message: "Session not found" } }, { status: 404 });
        transport = new WebStandardStreamableHTTPServerTransport({
          sessionIdGenerator: () => crypto.randomUUID(),
          onsessioninitialized: (id) => void sessions.set(id, transport!),
          // Bun.serve sends a streamed response's headers with its first byte: an idle GET stream would answer
          // only at the SDK's first keep-alive comment (15 s by default), so this server keeps alive every 200 ms
          keepAliveMs: 200,
        });
        await newServer().connect(transport);
      }
      return transport.handleRequest(req, { authInfo });
    },
  });
  return Object.assign(self, {
    url: `http://127.0.0.1:${http.port}/mcp`,
    calls,
    requests,
    async stop() {
      for (const t of sessions.values()) await t.close().catch(() => undefined);
      await http.stop(true);
    },
  });
}

async function introspect(auth: UpstreamAuth, token: string): Promise<{ active: boolean; sub: string }> {
  const response = await fetch(auth.introspectionEndpoint, {
    method: "POST",
    headers: {
      "content-type": "application/x-www-form-urlencoded",
      authorization: `Basic ${btoa(`${auth.apiClient.client_id}:${auth.apiClient.client_secret}`)}`,
    },
    body: new URLSearchParams({ token }).toString(),
  });
  if (!response.ok) return { active: false, sub: "" };
  const json = (await response.json()) as { active?: boolean; sub?: string };
  return { active: json.active === true, sub: json.sub ?? "" };
}
