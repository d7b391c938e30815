/**
 * A 2025 client in front of a 2026-only upstream (DESIGN §21): the client gets a session that ath keeps — its id is
 * ath's (`ath-mcps-…`), bound to the client and the person like any session (domain/mcp-sessions.ts), in the store so
 * any instance serves it — and each of its requests goes to the upstream as a 2026 request (held-calls.ts).
 * - `initialize` is answered from the upstream's `server/discover`: its capabilities, serverInfo and instructions, the
 *   client's protocol version when ath speaks it (else 2025-11-25);
 * - `ping`, `logging/setLevel`, `resources/subscribe`/`unsubscribe` and notifications are answered by ath (2026 has
 *   no such methods: the level rides on each request, subscriptions on the stream);
 * - a JSON-RPC response the client posts answers a request ath made of it (held-calls.ts), on any instance;
 * - GET opens the session's stream (the upstream's `subscriptions/listen`), DELETE ends the session.
 */
import { AthError } from "../../protocol/index.ts";
import { MCP_ERROR, MCP_META, MCP_WIRE } from "../../protocol/mcp-front-door.ts";
import { JSON_RPC, JsonRpcError } from "../http/errors.ts";
import { mintSecret } from "../crypto/secrets.ts";
import { giveInput } from "../domain/mcp-session-inputs.ts";
import { declaresUrlElicitation, forgetSession, rememberSession, updateHeld, type BoundSession, type HeldSession } from "../domain/mcp-sessions.ts";
import type { Door } from "./forward.ts";
import { heldCall } from "./held-calls.ts";
import { heldStream } from "./held-stream.ts";
import type { Message, Posted } from "./jsonrpc.ts";
import { isObject } from "./sse.ts";
import { call2026 } from "./upstream-calls.ts";

/** The most a held session's declared capabilities and client info may take (DESIGN §10's protocol body, 64 KiB). */
export const MAX_HELD_BYTES = 64 * 1024;

/** The 2025-era protocol versions ath speaks with a client on a session it holds. */
export const STATEFUL_VERSIONS = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/**
 * What a session ath holds keeps of the client's `initialize`: the version it speaks (a stateful one, else the default),
 * its capabilities and client info — kept in the store for the session's life, so bounded as a protocol body is.
 */
export function heldSessionOf(init: Message): HeldSession {
  const params = isObject(init.raw.params) ? init.raw.params : {};
  const version = typeof params.protocolVersion === "string" && STATEFUL_VERSIONS.includes(params.protocolVersion) ? params.protocolVersion : MCP_WIRE.stateful;
  const held: HeldSession = {
    protocolVersion: version,
    capabilities: isObject(params.capabilities) ? params.capabilities : {},
    clientInfo: isObject(params.clientInfo) ? params.clientInfo : {},
    logLevel: null,
    subscriptions: [],
  };
  if (JSON.stringify(held).length > MAX_HELD_BYTES) throw new JsonRpcError(400, init.id ?? null, MCP_ERROR.invalidParams, `Invalid params: the declared capabilities and client info exceed ${MAX_HELD_BYTES} bytes`);
  return held;
}

/** Answers `initialize` for a 2026-only upstream: a session of ath's. */
export async function openHeld(door: Door, init: Message): Promise<Response> {
  const { answer } = await call2026(door, "server/discover");
  if (answer === null || !("result" in answer)) throw new AthError("UPSTREAM_UNAVAILABLE", "The MCP server did not answer server/discover", { reason: "upstream_discover_failed" });
  const discovered = answer.result;
  const params = isObject(init.raw.params) ? init.raw.params : {};
  const held = heldSessionOf(init);
  const sid = mintSecret("ath-mcps-", 18);
  await rememberSession(door.gw, door.token, sid, declaresUrlElicitation(params), held);
  const meta = isObject(discovered._meta) ? discovered._meta : {};
  const result = {
    protocolVersion: held.protocolVersion,
    capabilities: isObject(discovered.capabilities) ? discovered.capabilities : {},
    serverInfo: isObject(meta[MCP_META.serverInfo]) ? meta[MCP_META.serverInfo] : { name: door.record.provider_id, version: "unknown" },
    ...(typeof discovered.instructions === "string" ? { instructions: discovered.instructions } : {}),
  };
  return Response.json({ jsonrpc: "2.0", id: init.id, result }, { headers: { "mcp-session-id": sid } });
}

/** A request on a session ath holds; `judged`: what the one call decision said of the POST's call (it passed). */
export async function serveHeld(door: Door, session: BoundSession, posted: Posted, judged: { approved: boolean; remaining: number | null }): Promise<Response> {
  const held = session.held!;
  const { gw, req, token } = door;
  if (req.method === "GET") return heldStream(door, held);
  if (req.method === "DELETE") {
    await forgetSession(gw, token, session.id);
    return new Response(null, { status: 200 });
  }
  if (posted.batch || posted.messages.length !== 1) throw new JsonRpcError(400, null, JSON_RPC.invalidRequest, "Invalid Request: one JSON-RPC message per POST");
  const m = posted.messages[0]!;
  if (m.call === null) {
    // the client's answer to a request ath made of it (held-calls.ts)
    if (m.raw.id !== undefined) await giveInput(gw, token, session.id, String(m.raw.id), m.raw);
    return new Response(null, { status: 202 });
  }
  if (m.id === undefined) return new Response(null, { status: 202 });
  const ok = (result: Record<string, unknown> = {}) => Response.json({ jsonrpc: "2.0", id: m.id, result });
  const params = isObject(m.raw.params) ? m.raw.params : {};
  switch (m.call.method) {
    case "initialize":
      throw new JsonRpcError(400, m.id, JSON_RPC.invalidRequest, "Invalid Request: the session is already initialized");
    case "ping":
      return ok();
    case "logging/setLevel":
      await updateHeld(gw, token, session.id, { ...held, logLevel: typeof params.level === "string" ? params.level : null });
      return ok();
    case "resources/subscribe":
    case "resources/unsubscribe": {
      const uri = typeof params.uri === "string" ? params.uri : null;
      const rest = held.subscriptions.filter((u) => u !== uri);
      await updateHeld(gw, token, session.id, { ...held, subscriptions: m.call.method === "resources/subscribe" && uri !== null ? [...rest, uri] : rest });
      return ok();
    }
  }
  return heldCall(door, session, m, posted.text, judged);
}
