/**
 * Reading what an MCP client POSTs (JSON-RPC 2.0 over Streamable HTTP, DESIGN §18): one message or — MCP before
 * 2025-06-18 — a batch, read strictly (rules/strict-json.ts): a body that is not UTF-8, not one JSON text, nested too
 * deep or holding a key twice is refused (-32700) rather than read one way by ath and another by the upstream. Each
 * request becomes the MCP call policy judges, with the bytes of its `params.arguments` as sent (what an approval binds).
 */
import { JSON_RPC, JsonRpcError } from "../http/errors.ts";
import { callOf, type McpCall } from "../rules/mcp-call.ts";
import { decodeUtf8, readStrictText, spanOf, UnreadableJson } from "../rules/strict-json.ts";

/** One JSON-RPC message of the POST. */
export interface Message {
  /** The message as read. */
  raw: Record<string, unknown>;
  /** Its `id`; undefined for a notification (and for a response's own `id`, which is the server's). */
  id: unknown;
  /** The call it makes; null for a response to the server's own request (sampling, elicitation). */
  call: McpCall | null;
  /** The bytes of `params.arguments` exactly as sent; empty when absent. */
  argumentBytes: Uint8Array;
}

export interface Posted {
  /** The body was a JSON array (a batch). */
  batch: boolean;
  messages: Message[];
  /** The body as read (UTF-8): the text the messages' spans (rules/strict-json.ts `spanOf`) point into. */
  text: string;
}

/** The messages of a POST body, or a JsonRpcError (400) naming why it cannot be read. */
export function readMessages(bytes: Uint8Array): Posted {
  let text: string;
  let parsed: unknown;
  try {
    text = decodeUtf8(bytes);
    parsed = readStrictText(text);
  } catch (err) {
    if (err instanceof UnreadableJson) throw new JsonRpcError(400, null, JSON_RPC.parseError, `Parse error: ${err.message}`, { reason: "unreadable_body" });
    throw err;
  }
  const raws = Array.isArray(parsed) ? parsed : [parsed];
  if (raws.length === 0 || raws.some((m) => m === null || typeof m !== "object" || Array.isArray(m))) {
    throw new JsonRpcError(400, null, JSON_RPC.invalidRequest, "Invalid Request: expected a JSON-RPC message");
  }
  const encoder = new TextEncoder();
  const messages = (raws as Record<string, unknown>[]).map((raw): Message => {
    if (typeof raw.method !== "string") return { raw, id: undefined, call: null, argumentBytes: EMPTY };
    const params = raw.params;
    const span = params !== null && typeof params === "object" && !Array.isArray(params) ? spanOf(params, "arguments") : undefined;
    return { raw, id: raw.id, call: callOf(raw.method, params), argumentBytes: span ? encoder.encode(text.slice(span[0], span[1])) : EMPTY };
  });
  return { batch: Array.isArray(parsed), messages, text };
}

// internal

const EMPTY = new Uint8Array(0);
