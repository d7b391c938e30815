/**
 * `tools/list` answers only the tools a client may call (DESIGN §18): the upstream's answer to a `tools/list` request —
 * a JSON body or an event of a `text/event-stream` — has the tools `keep` refuses taken out of `result.tools`; on the
 * 2026 wire a list ath filtered per person carries `ttlMs` (the upstream's, at most 60 s; 60 s when it gave none) and
 * `cacheScope: "private"` (DESIGN §21), and every list read shows its tools to `seen` (their schemas say which
 * arguments Mcp-Param-* headers mirror). Every other message, event and byte passes unchanged; a stream is rewritten
 * event by event as it flows.
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

/** The most a list ath filtered may be cached for, and its ttlMs when the upstream gave none (DESIGN §21). */
export const LIST_TTL_MS = 60_000;

/** What to do to the answers of one POST's tools/list requests. */
export interface ListRewrite {
  /** The JSON-RPC ids (as JSON) of the POST's tools/list requests. */
  ids: ReadonlySet<string>;
  keep: KeepTool;
  /** Add the 2026 wire's caching hints for a list filtered per person. */
  hints: boolean;
  /** Shown every listed tool, unfiltered. */
  seen?: (tools: readonly unknown[]) => void;
}

/** The upstream's response with the listed tools filtered; `ids` are the JSON-RPC ids (as JSON) of this POST's tools/list requests. */
export function filterToolLists(res: Response, ids: ReadonlySet<string>, keep: KeepTool, headers: Record<string, string>): Promise<Response> {
  return rewriteLists(res, { ids, keep, hints: false }, headers);
}

/** The upstream's response with its list answers rewritten as `r` says. */
export async function rewriteLists(res: Response, r: ListRewrite, headers: Record<string, string>): Promise<Response> {
  const { ids } = r;
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
    const changed = Array.isArray(parsed) ? parsed.map((m) => filterMessage(m, ids, r)) : filterMessage(parsed, ids, r);
    return new Response(JSON.stringify(changed), { status: res.status, statusText: res.statusText, headers: out });
  }
  if (type === "text/event-stream" && res.body) {
    return new Response(res.body.pipeThrough(new TextDecoderStream()).pipeThrough(eventFilter(ids, r)).pipeThrough(new TextEncoderStream()), {
      status: res.status,
      statusText: res.statusText,
      headers: out,
    });
  }
  return new Response(res.body, { status: res.status, statusText: res.statusText, headers: out });
}

/** A JSON-RPC response to one of `r.ids` with `result.tools` rewritten; anything else as it was. */
export function filterMessage(message: unknown, ids: ReadonlySet<string>, r: ListRewrite): unknown {
  if (message === null || typeof message !== "object" || Array.isArray(message)) return message;
  const m = message as { id?: unknown; result?: { tools?: unknown; ttlMs?: unknown } };
  if (m.id === undefined || !ids.has(JSON.stringify(m.id))) return message;
  const tools = m.result?.tools;
  if (!Array.isArray(tools)) return message;
  r.seen?.(tools);
  const kept = tools.filter((t) => !(t !== null && typeof t === "object" && typeof (t as { name?: unknown }).name === "string") || r.keep((t as { name: string }).name));
  if (kept.length === tools.length && !r.hints) return message;
  const given = m.result!.ttlMs;
  const hints = r.hints ? { ttlMs: typeof given === "number" && given >= 0 ? Math.min(given, LIST_TTL_MS) : LIST_TTL_MS, cacheScope: "private" } : {};
  return { ...m, result: { ...m.result, tools: kept, ...hints } };
}

// internal

/** Splits the stream into events (a blank line ends one); an event whose data is a matching answer is re-serialized. */
function eventFilter(ids: ReadonlySet<string>, r: ListRewrite): TransformStream<string, string> {
  let buffer = "";
  const flushEvents = (controller: TransformStreamDefaultController<string>, final: boolean) => {
    for (;;) {
      const end = /\r\n\r\n|\n\n|\r\r/.exec(buffer);
      if (!end) break;
      const event = buffer.slice(0, end.index);
      controller.enqueue(rewrite(event, ids, r) + end[0]);
      buffer = buffer.slice(end.index + end[0].length);
    }
    if (final && buffer) {
      controller.enqueue(rewrite(buffer, ids, r));
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

function rewrite(event: string, ids: ReadonlySet<string>, r: ListRewrite): string {
  const lines = event.split(/\r\n|\n|\r/);
  const data = lines.filter((l) => l.startsWith("data:")).map((l) => l.slice(l.startsWith("data: ") ? 6 : 5));
  if (data.length === 0) return event;
  let parsed: unknown;
  try {
    parsed = JSON.parse(data.join("\n"));
  } catch {
    return event;
  }
  const changed = filterMessage(parsed, ids, r);
  if (changed === parsed) return event;
  return [...lines.filter((l) => !l.startsWith("data:")), `data: ${JSON.stringify(changed)}`].join("\n");
}
