/**
 * Server-sent events (the WHATWG event-stream format) as the MCP bridges read and write them: an upstream's answer — a
 * JSON body or a `text/event-stream` — as the JSON-RPC messages it carries, one at a time as they arrive, each event
 * held to MAX_EVENT_BYTES (a never-ending event is cut, never buffered past the bound); and the one-line events ath
 * writes to a client.
 */
import { AthError } from "../../protocol/index.ts";
import { readBounded } from "../http/body.ts";
import { MAX_LIST_BYTES } from "./tools-list.ts";

/** The most one event (or a JSON answer) may hold. */
export const MAX_EVENT_BYTES = MAX_LIST_BYTES;

/** The JSON-RPC messages of an upstream's answer, in order (events that are not JSON are skipped); `stop` ends the reading. */
export async function* messagesOf(res: Response, stop?: AbortSignal): AsyncGenerator<Record<string, unknown>> {
  const type = (res.headers.get("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
  if (type !== "text/event-stream") {
    const text = new TextDecoder().decode(await readBounded(res.body, res.headers.get("content-length"), MAX_EVENT_BYTES, tooLarge));
    let parsed: unknown;
    try {
      parsed = text.length ? JSON.parse(text) : null;
    } catch {
      return;
    }
    for (const m of Array.isArray(parsed) ? parsed : [parsed]) if (isObject(m)) yield m;
    return;
  }
  if (!res.body) return;
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  const onStop = () => void reader.cancel().catch(() => undefined);
  stop?.addEventListener("abort", onStop);
  if (stop?.aborted) onStop();
  let buffer = "";
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (value) buffer += value;
      for (;;) {
        const end = /\r\n\r\n|\n\n|\r\r/.exec(buffer);
        if (!end) break;
        const m = dataOf(buffer.slice(0, end.index));
        buffer = buffer.slice(end.index + end[0].length);
        if (m) yield m;
      }
      if (buffer.length > MAX_EVENT_BYTES) throw tooLarge();
      if (done) break;
    }
    const last = dataOf(buffer);
    if (last) yield last;
  } finally {
    stop?.removeEventListener("abort", onStop);
    await reader.cancel().catch(() => undefined);
  }
}

/** One SSE event carrying a JSON-RPC message. */
export function event(message: unknown): string {
  return `event: message\ndata: ${JSON.stringify(message)}\n\n`;
}

export function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

// internal

function dataOf(block: string): Record<string, unknown> | null {
  const data = block
    .split(/\r\n|\n|\r/)
    .filter((l) => l.startsWith("data:"))
    .map((l) => l.slice(l.startsWith("data: ") ? 6 : 5))
    .join("\n");
  if (!data) return null;
  try {
    const v = JSON.parse(data) as unknown;
    return isObject(v) ? v : null;
  } catch {
    return null;
  }
}

function tooLarge(): AthError {
  return new AthError("UPSTREAM_UNAVAILABLE", `An event of the MCP server's answer exceeds ${MAX_EVENT_BYTES} bytes`, { reason: "event_too_large" });
}
