/**
 * `tools/list` answers only the tools a client may call (DESIGN §18): the upstream's answer to a `tools/list` request —
 * a JSON body or an event of a `text/event-stream` — has the tools `keep` refuses taken out of `result.tools`. Every
 * other message, event and byte passes unchanged; a stream is rewritten event by event as it flows.
 *
 * Bounded (issue 35 #7): what must be held to be rewritten — a JSON answer, or one event still without its end — is at
 * most MAX_LIST_BYTES; an upstream that sends more (a never-ending event) gets its answer cut: 502 for a JSON body, an
 * errored stream for events. Nothing past the bound is buffered.
 */
import { AthError } from "../../protocol/index.ts";
import { readBounded } from "../http/body.ts";

/** The most a list answer (or one event of a stream) may hold while ath filters it: 8 MiB, ≈ 20,000 tools with schemas. */
export const MAX_LIST_BYTES = 8 * 1024 * 1024;

/** Which tools stay: called with each tool's name. */
export type KeepTool = (name: string) => boolean;

/** The upstream's response with the listed tools filtered; `ids` are the JSON-RPC ids (as JSON) of this POST's tools/list requests. */
export async function filterToolLists(res: Response, ids: ReadonlySet<string>, keep: KeepTool, headers: Record<string, string>): Promise<Response> {
  const type = (res.headers.get("content-type") ?? "").split(";")[0]!.trim().toLowerCase();
  const out = { ...headers };
  delete out["content-length"];
  if (type === "application/json") {
    const text = new TextDecoder().decode(await readBounded(res.body, res.headers.get("content-length"), MAX_LIST_BYTES, tooLarge));
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      return new Response(text, { status: res.status, statusText: res.statusText, headers: out });
    }
    const changed = Array.isArray(parsed) ? parsed.map((m) => filterMessage(m, ids, keep)) : filterMessage(parsed, ids, keep);
    return new Response(JSON.stringify(changed), { status: res.status, statusText: res.statusText, headers: out });
  }
  if (type === "text/event-stream" && res.body) {
    return new Response(res.body.pipeThrough(new TextDecoderStream()).pipeThrough(eventFilter(ids, keep)).pipeThrough(new TextEncoderStream()), {
      status: res.status,
      statusText: res.statusText,
      headers: out,
    });
  }
  return new Response(res.body, { status: res.status, statusText: res.statusText, headers: out });
}

/** A JSON-RPC response to one of `ids` with `result.tools` filtered; anything else as it was. */
export function filterMessage(message: unknown, ids: ReadonlySet<string>, keep: KeepTool): unknown {
  if (message === null || typeof message !== "object" || Array.isArray(message)) return message;
  const m = message as { id?: unknown; result?: { tools?: unknown } };
  if (m.id === undefined || !ids.has(JSON.stringify(m.id))) return message;
  const tools = m.result?.tools;
  if (!Array.isArray(tools)) return message;
  const kept = tools.filter((t) => !(t !== null && typeof t === "object" && typeof (t as { name?: unknown }).name === "string") || keep((t as { name: string }).name));
  return { ...m, result: { ...m.result, tools: kept } };
}

// internal

/** Splits the stream into events (a blank line ends one); an event whose data is a matching answer is re-serialized. */
function eventFilter(ids: ReadonlySet<string>, keep: KeepTool): TransformStream<string, string> {
  let buffer = "";
  const flushEvents = (controller: TransformStreamDefaultController<string>, final: boolean) => {
    for (;;) {
      const end = /\r\n\r\n|\n\n|\r\r/.exec(buffer);
      if (!end) break;
      const event = buffer.slice(0, end.index);
      controller.enqueue(rewrite(event, ids, keep) + end[0]);
      buffer = buffer.slice(end.index + end[0].length);
    }
    if (final && buffer) {
      controller.enqueue(rewrite(buffer, ids, keep));
      buffer = "";
    }
  };
  return new TransformStream({
    transform(chunk, controller) {
      buffer += chunk;
      flushEvents(controller, false);
      // one event that never ends would be held whole: cut it (chars ≥ bytes / 4 for UTF-8; the bound is on chars)
      if (buffer.length > MAX_LIST_BYTES) controller.error(tooLarge());
    },
    flush(controller) {
      flushEvents(controller, true);
    },
  });
}

function tooLarge(): AthError {
  return new AthError("UPSTREAM_UNAVAILABLE", `The MCP server's list answer exceeds ${MAX_LIST_BYTES} bytes`, { reason: "list_too_large" });
}

function rewrite(event: string, ids: ReadonlySet<string>, keep: KeepTool): string {
  const lines = event.split(/\r\n|\n|\r/);
  const data = lines.filter((l) => l.startsWith("data:")).map((l) => l.slice(l.startsWith("data: ") ? 6 : 5));
  if (data.length === 0) return event;
  let parsed: unknown;
  try {
    parsed = JSON.parse(data.join("\n"));
  } catch {
    return event;
  }
  const changed = filterMessage(parsed, ids, keep);
  if (changed === parsed) return event;
  return [...lines.filter((l) => !l.startsWith("data:")), `data: ${JSON.stringify(changed)}`].join("\n");
}
