/**
 * A 2026-07-28 client in front of an upstream that speaks only 2025-11-25 (DESIGN §21): ath gives the client stateless
 * semantics on a session it holds at the upstream (upstream-session.ts). Per request, once judged:
 * - the 2026 envelope is checked as a 2026 server checks it (-32602 without `_meta` protocol version and capabilities,
 *   -32022 for another version); `server/discover` is answered from the upstream's `initialize`; methods 2026 does not
 *   have (initialize, ping, logging/setLevel, resources/subscribe…) are 404 -32601; `subscriptions/listen` is the
 *   session's stream (bridge-listen.ts);
 * - everything else goes on the session without the envelope, under an id of ath's (sessions are shared by the
 *   client's requests), and its answer comes back with the client's id, `resultType`, and on lists and reads the
 *   caching hints (`cacheScope: "private"`; lists 60 s, reads 0);
 * - a request the upstream makes of the client mid-call (elicitation, sampling, roots) becomes a multi-round-trip
 *   round (bridge-rounds.ts); logs reach the client only when it asked for them (`_meta` logLevel).
 */
import { MCP_ERROR, MCP_META, MCP_WIRE } from "../../protocol/mcp-front-door.ts";
import { JsonRpcError } from "../http/errors.ts";
import type { Door, Sending } from "./forward.ts";
import type { Message } from "./jsonrpc.ts";
import { bridgeListen } from "./bridge-listen.ts";
import { translateAnswer } from "./bridge-rounds.ts";
import type { OpenedBridge } from "./request-state.ts";
import { rewriteParams } from "./rewrite.ts";
import { isObject } from "./sse.ts";
import { onSession, sessionFor } from "./upstream-session.ts";

/** The 2026 methods a bridged request may use (the rest of 2026's list is answered here). */
const FORWARDED = new Set(["tools/list", "tools/call", "resources/list", "resources/templates/list", "resources/read", "prompts/list", "prompts/get", "completion/complete"]);

export async function bridgeStateless(door: Door, m: Message, text: string, sending: Sending, bridge: OpenedBridge | null, digest: string): Promise<Response> {
  const params = isObject(m.raw.params) ? m.raw.params : {};
  const meta = envelope(m, params);
  const capabilities = meta[MCP_META.clientCapabilities] as Record<string, unknown>;
  if (m.id === undefined) return new Response(null, { status: 202 });
  const method = m.call!.method;
  if (method === "server/discover") return Response.json({ jsonrpc: "2.0", id: m.id, result: discovered((await sessionFor(door, capabilities)).opened) });
  if (method === "subscriptions/listen") return bridgeListen(door, m, capabilities);
  if (!FORWARDED.has(method)) throw new JsonRpcError(404, m.id, MCP_ERROR.methodNotFound, `Method not found: ${method}`);
  const upstreamId = `ath-${crypto.randomUUID()}`;
  const kept = Object.fromEntries(Object.entries(meta).filter(([k]) => !k.startsWith("io.modelcontextprotocol/")));
  const forwarded = rewriteParams(text, m, {
    id: JSON.stringify(upstreamId),
    drop: ["requestState", "inputResponses", ...(Object.keys(kept).length ? [] : ["_meta"])],
    set: Object.keys(kept).length ? { _meta: JSON.stringify(kept) } : {},
  });
  const { res } = await onSession(door, capabilities, forwarded, { messages: [m], once: sending.once, remaining: sending.remaining });
  const answers = { ...(bridge?.answers ?? {}), ...(isObject(params.inputResponses) ? params.inputResponses : {}) };
  return translateAnswer(door, res, { m, method, upstreamId, capabilities, logLevel: meta[MCP_META.logLevel], answers, digest, once: sending.once });
}

// internal

/** The request's 2026 envelope, as a 2026 server checks it. */
function envelope(m: Message, params: Record<string, unknown>): Record<string, unknown> {
  const meta = params._meta;
  const version = isObject(meta) ? meta[MCP_META.protocolVersion] : undefined;
  const caps = isObject(meta) ? meta[MCP_META.clientCapabilities] : undefined;
  if (!isObject(meta) || typeof version !== "string" || !isObject(caps)) {
    const missing = [typeof version !== "string" ? MCP_META.protocolVersion : null, !isObject(caps) ? MCP_META.clientCapabilities : null].filter(Boolean);
    throw new JsonRpcError(400, m.id ?? null, MCP_ERROR.invalidParams, `Invalid params: _meta must carry ${missing.join(" and ")}`, { missing });
  }
  if (version !== MCP_WIRE.stateless) {
    throw new JsonRpcError(400, m.id ?? null, MCP_ERROR.unsupportedVersion, `Unsupported protocol version: ${version}`, { supported: [MCP_WIRE.stateless], requested: version });
  }
  return meta;
}

/** `server/discover`'s answer from the upstream's answer to `initialize`. */
function discovered(opened: Record<string, unknown>): Record<string, unknown> {
  return {
    supportedVersions: [MCP_WIRE.stateless],
    capabilities: isObject(opened.capabilities) ? opened.capabilities : {},
    ...(typeof opened.instructions === "string" ? { instructions: opened.instructions } : {}),
    _meta: { [MCP_META.serverInfo]: isObject(opened.serverInfo) ? opened.serverInfo : {} },
    resultType: "complete",
    ttlMs: 0,
    cacheScope: "private",
  };
}
