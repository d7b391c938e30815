/**
 * The requests ath itself sends an upstream MCP server — never a client's call, never audited as one: `server/discover`
 * to learn its wire, `tools/list` to learn the schemas the 2026 header checks need, and (bridging) `initialize` to open
 * a session. Sent with the caller's own upstream token through the one relay; answers read bounded, JSON or events.
 */
import { AthError } from "../../protocol/index.ts";
import { MCP_META, MCP_WIRE } from "../../protocol/mcp-front-door.ts";
import { readBounded } from "../http/body.ts";
import type { HeaderFields } from "../proxy/headers.ts";
import { sendUpstream, type Door } from "./forward.ts";
import { MAX_LIST_BYTES } from "./tools-list.ts";
import { onSession } from "./upstream-session.ts";

/** A JSON-RPC answer ath read: its result, or its error. */
export type RpcAnswer = { result: Record<string, unknown> } | { error: { code: number; message: string; data?: unknown } };

/** One 2026-07-28 request of ath's own (`_meta` envelope and standard headers set); its answer, or null when none came. */
export async function call2026(door: Door, method: string, params: Record<string, unknown> = {}): Promise<{ status: number; answer: RpcAnswer | null }> {
  const meta = { [MCP_META.protocolVersion]: MCP_WIRE.stateless, [MCP_META.clientCapabilities]: {}, [MCP_META.clientInfo]: CLIENT_INFO };
  const headers: HeaderFields = { "content-type": "application/json", accept: "application/json, text/event-stream", "mcp-protocol-version": MCP_WIRE.stateless, "mcp-method": method };
  return rpc(door, { jsonrpc: "2.0", id: OWN_ID, method, params: { ...params, _meta: meta } }, headers);
}

/** One JSON-RPC message of ath's own, sent with `headers`; the answer to it, or null (none, or not readable). */
export async function rpc(door: Door, message: Record<string, unknown>, headers: HeaderFields): Promise<{ status: number; answer: RpcAnswer | null; res: Response }> {
  const body = new TextEncoder().encode(JSON.stringify(message));
  const res = await sendUpstream(door, [], { method: "POST", body: { data: body.buffer as ArrayBuffer, replayable: true }, headers, once: false, remaining: null, stateless: true });
  const text = new TextDecoder().decode(await readBounded(res.body, res.headers.get("content-length"), MAX_LIST_BYTES, tooLarge));
  return { status: res.status, answer: answerIn(text, message.id), res };
}

/** The answer to request `id` in a JSON body or an event stream; null when there is none. */
export function answerIn(text: string, id: unknown): RpcAnswer | null {
  const candidates: unknown[] = [];
  try {
    candidates.push(JSON.parse(text));
  } catch {
    for (const event of text.split(/\r?\n\r?\n/)) {
      const data = event.split(/\r?\n/).filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trimStart()).join("\n");
      try {
        if (data) candidates.push(JSON.parse(data));
      } catch {
        // not JSON: skip the event
      }
    }
  }
  for (const c of candidates.flat()) {
    const m = c as { id?: unknown; result?: unknown; error?: unknown };
    if (m === null || typeof m !== "object" || m.id !== id) continue;
    if (m.result !== null && typeof m.result === "object") return { result: m.result as Record<string, unknown> };
    if (m.error !== null && typeof m.error === "object") return { error: m.error as { code: number; message: string } };
  }
  return null;
}

/** One page of the upstream's tools/list, asked for by ath (the header checks need the schemas). */
export async function listTools(door: Door, speaks2026: boolean, cursor: string | null): Promise<{ tools: readonly unknown[]; nextCursor: string | null }> {
  const params = cursor === null ? {} : { cursor };
  const answer = speaks2026 ? (await call2026(door, "tools/list", params)).answer : await onSessionRpc(door, "tools/list", params);
  if (answer === null || !("result" in answer)) return { tools: [], nextCursor: null };
  const r = answer.result;
  return { tools: Array.isArray(r.tools) ? r.tools : [], nextCursor: typeof r.nextCursor === "string" ? r.nextCursor : null };
}

/** One request of ath's own on the session it holds at a 2025 upstream (declaring no client capabilities). */
async function onSessionRpc(door: Door, method: string, params: Record<string, unknown>): Promise<RpcAnswer | null> {
  const { res } = await onSession(door, {}, JSON.stringify({ jsonrpc: "2.0", id: OWN_ID, method, params }));
  const text = new TextDecoder().decode(await readBounded(res.body, res.headers.get("content-length"), MAX_LIST_BYTES, tooLarge));
  return answerIn(text, OWN_ID);
}

/** ath as an MCP client (what it tells an upstream it is). */
export const CLIENT_INFO = { name: "ath-gateway", version: "1" } as const;

// internal

const OWN_ID = "ath-1";

function tooLarge(): AthError {
  return new AthError("UPSTREAM_UNAVAILABLE", `The MCP server's answer exceeds ${MAX_LIST_BYTES} bytes`, { reason: "answer_too_large" });
}
