/**
 * The reference MCP server of the conformance and front-door tests, on the official SDK 2.x, on a loopback port, in
 * one of three variants:
 * - `both`: MCP 2025-11-25 (stateful sessions, `Mcp-Session-Id`, resumable SSE) and 2026-07-28 (stateless, per request)
 *   on one URL — each POST routed by the SDK's own classifier, as the SDK documents for a dual-era deployment;
 * - `2025`: sessions only — a 2026 request (no session, no `initialize`) is refused as a 2025 server refuses it;
 * - `2026`: stateless only — a 2025 request is refused with the unsupported-protocol-version error.
 * It protects itself from DNS rebinding as the SDK's localhost servers do (a non-loopback Host or Origin → 403), so
 * the suite's `dns-rebinding-protection` passes straight at it. `requests` records every HTTP request, `surface.seen`
 * every tool call that reached a handler.
 */
import {
  classifyInboundRequest,
  createMcpHandler,
  isInitializeRequest,
  localhostAllowedHostnames,
  hostHeaderValidationResponse,
  originValidationResponse,
  WebStandardStreamableHTTPServerTransport,
  type EventStore,
} from "@modelcontextprotocol/server";
import { referenceServer, type Surface } from "./surface.ts";

export type Wires = "both" | "2025" | "2026";

export interface ReferenceMcp {
  url: string;
  wires: Wires;
  surface: Surface;
  /** Every HTTP request that reached the server. */
  requests: { method: string; rpc: string | null; sessionId: string | null; protocolVersion: string | null; mcpMethod: string | null; authorization: string | null }[];
  /** The 2025 sessions currently open, by id (a test may end one to see who re-creates it). */
  sessions: Map<string, WebStandardStreamableHTTPServerTransport>;
  stop(): Promise<void>;
}

/** The server as a fetch handler (in process: the in-process network's host), without the listener's Host check. */
export interface ReferenceHandler extends Omit<ReferenceMcp, "url" | "stop"> {
  fetch(req: Request): Promise<Response>;
  close(): Promise<void>;
}

export async function startReferenceMcp(wires: Wires = "both"): Promise<ReferenceMcp> {
  const handler = referenceHandler(wires);
  const hosts = localhostAllowedHostnames();
  const http = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 120,
    fetch: (req) => hostHeaderValidationResponse(req, hosts) ?? originValidationResponse(req, hosts) ?? handler.fetch(req),
  });
  const { fetch: _, close, ...rest } = handler;
  return {
    ...rest,
    url: `http://127.0.0.1:${http.port}/mcp`,
    async stop() {
      await close();
      await http.stop(true);
    },
  };
}

export function referenceHandler(wires: Wires = "both"): ReferenceHandler {
  const surface: Surface = { seen: [], notify: { toolsChanged: () => undefined, promptsChanged: () => undefined } };
  const requests: ReferenceMcp["requests"] = [];
  const sessions = new Map<string, WebStandardStreamableHTTPServerTransport>();
  const modern = createMcpHandler(() => referenceServer(surface, "modern"), { legacy: "reject" });
  // a list change reaches the 2026 listeners and every open 2025 session (its GET stream)
  const legacyServers = new Set<ReturnType<typeof referenceServer>>();
  surface.notify = {
    toolsChanged: () => (modern.notify.toolsChanged(), legacyServers.forEach((s) => s.sendToolListChanged())),
    promptsChanged: () => (modern.notify.promptsChanged(), legacyServers.forEach((s) => s.sendPromptListChanged())),
  };
  async function legacy(req: Request, body: unknown): Promise<Response> {
    const sid = req.headers.get("mcp-session-id");
    const open = sid === null ? undefined : sessions.get(sid);
    if (open) return open.handleRequest(req, { parsedBody: body });
    if (sid !== null) return Response.json({ jsonrpc: "2.0", id: null, error: { code: -32001, message: "Session not found" } }, { status: 404 });
    if (req.method !== "POST" || !isInitializeRequest(body)) {
      return Response.json({ jsonrpc: "2.0", id: null, error: { code: -32000, message: "Bad Request: Mcp-Session-Id header is required" } }, { status: 400 });
    }
    const server = referenceServer(surface, "legacy");
    const transport: WebStandardStreamableHTTPServerTransport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => crypto.randomUUID(),
      eventStore: memoryEventStore(),
      retryInterval: 1000,
      onsessioninitialized: (id) => void (sessions.set(id, transport), legacyServers.add(server)),
      onsessionclosed: (id) => void (sessions.delete(id), legacyServers.delete(server)),
    });
    await server.connect(transport);
    return transport.handleRequest(req, { parsedBody: body });
  }

  return {
    wires,
    surface,
    requests,
    sessions,
    async fetch(req) {
      let body: unknown;
      if (req.method === "POST") {
        const raw = await req.text();
        try {
          body = JSON.parse(raw);
        } catch {
          body = undefined;
        }
      }
      const rpc = body !== null && typeof body === "object" && !Array.isArray(body) ? String((body as { method?: unknown }).method ?? "") || null : null;
      const h = req.headers;
      requests.push({ method: req.method, rpc, sessionId: h.get("mcp-session-id"), protocolVersion: h.get("mcp-protocol-version"), mcpMethod: h.get("mcp-method"), authorization: h.get("authorization") });
      if (req.method === "POST" && body === undefined) return Response.json({ jsonrpc: "2.0", id: null, error: { code: -32700, message: "Parse error" } }, { status: 400 });
      const route = classifyInboundRequest({
        httpMethod: req.method,
        protocolVersionHeader: h.get("mcp-protocol-version") ?? undefined,
        mcpMethodHeader: h.get("mcp-method") ?? undefined,
        mcpNameHeader: h.get("mcp-name") ?? undefined,
        body,
      });
      const isModern = route.kind !== "legacy";
      if (wires === "2025" || (wires === "both" && !isModern)) return legacy(req, body);
      return modern.fetch(req, { parsedBody: body });
    },
    async close() {
      for (const t of sessions.values()) await t.close().catch(() => undefined);
      await modern.close();
    },
  };
}

// internal

/** Resumable SSE for the 2025 sessions (the suite's `server-sse-multiple-streams` reconnects with Last-Event-ID). */
function memoryEventStore(): EventStore {
  const events: { id: string; stream: string; message: unknown }[] = [];
  let n = 0;
  return {
    async storeEvent(stream, message) {
      const id = `${stream}::${String(++n).padStart(10, "0")}`;
      events.push({ id, stream, message });
      return id;
    },
    async replayEventsAfter(last, { send }) {
      const stream = last.split("::")[0] ?? last;
      for (const e of events) if (e.stream === stream && e.id > last && e.message && Object.keys(e.message).length) await send(e.id, e.message as never);
      return stream;
    },
  };
}
