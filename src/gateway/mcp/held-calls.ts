/**
 * A call on a session ath holds, sent to a 2026-only upstream (DESIGN §21): the message as sent — its arguments byte
 * for byte — with the 2026 envelope the session stands for in `_meta` (protocol version, the capabilities and client
 * info declared at `initialize`, the log level set, every log when none was) and the standard headers (Mcp-Method,
 * Mcp-Name, Mcp-Param-* from the tool's schema). The upstream's answer comes back as 2025 has it — under the client's
 * id, without 2026's `resultType`, caching hints and envelope, a tool list filtered per person — streamed when it streams.
 *
 * An `input_required` answer becomes the 2025 wire's own requests: each input request goes to the client on the
 * answer's stream as a server→client request, the client posts its answer on the session (to any instance:
 * domain/mcp-session-inputs.ts), and the call is sent again with `inputResponses` and the upstream's `requestState`
 * until it completes — one call of the client's (one approval covers it), however many rounds the upstream needs.
 * Nothing waits longer than INPUT_WAIT_MS, or past the client hanging up.
 */
import { MCP_META, MCP_WIRE } from "../../protocol/mcp-front-door.ts";
import { jsonRpcErrorBody } from "../http/errors.ts";
import { awaitInput, takeInput } from "../domain/mcp-session-inputs.ts";
import type { BoundSession } from "../domain/mcp-sessions.ts";
import { listRewriteFor, sendUpstream, type Door } from "./forward.ts";
import { standardHeaders } from "./headers.ts";
import type { Message } from "./jsonrpc.ts";
import { LazyAnswer } from "./lazy-answer.ts";
import { rewriteParams } from "./rewrite.ts";
import { isObject, messagesOf } from "./sse.ts";
import { toolHeaders } from "./tool-schemas.ts";
import { filterMessage } from "./tools-list.ts";
import { listTools } from "./upstream-calls.ts";

/** How long ath waits for the client's answer to one request it made of it: under the 255 s a connection may stay idle. */
export const INPUT_WAIT_MS = 240_000;

/** Rounds of input one call may take at most (the upstream asking forever is cut). */
export const MAX_ROUNDS = 10;

export async function heldCall(door: Door, session: BoundSession, m: Message, text: string, judged: { approved: boolean; remaining: number | null }): Promise<Response> {
  const { gw, record, token } = door;
  const held = session.held!;
  const method = m.call!.method;
  const params = isObject(m.raw.params) ? m.raw.params : {};
  const declared = method === "tools/call" && m.call!.name !== null ? await toolHeaders(gw, record.provider_id, m.call!.name, (cursor) => listTools(door, true, cursor)) : [];
  const own = isObject(params._meta) ? params._meta : {};
  const meta = {
    ...own,
    [MCP_META.protocolVersion]: MCP_WIRE.stateless,
    [MCP_META.clientCapabilities]: held.capabilities,
    [MCP_META.clientInfo]: held.clientInfo,
    [MCP_META.logLevel]: held.logLevel ?? "debug",
  };
  const headers = { "content-type": "application/json", accept: "application/json, text/event-stream", ...standardHeaders(method, params, MCP_WIRE.stateless, declared) };
  const stop = new AbortController();
  // the client hanging up ends every wait for it
  const out = new LazyAnswer({}, () => stop.abort());
  void (async () => {
    let retry: { inputResponses: Record<string, unknown>; requestState: unknown } | null = null;
    try {
      for (let round = 0; round <= MAX_ROUNDS; round++) {
        const set: Record<string, string> = { _meta: JSON.stringify(meta) };
        if (retry) {
          set.inputResponses = JSON.stringify(retry.inputResponses);
          if (typeof retry.requestState === "string") set.requestState = JSON.stringify(retry.requestState);
        }
        const body = new TextEncoder().encode(rewriteParams(text, m, { set, drop: ["inputResponses", "requestState"] }));
        const res = await sendUpstream(door, round === 0 ? [m] : [], {
          method: "POST",
          body: { data: body.buffer as ArrayBuffer, replayable: true },
          headers: { ...headers },
          once: judged.approved,
          remaining: judged.remaining,
          stateless: true,
        });
        if (!res.ok) return out.finish(await upstreamFailure(m, res), res.status);
        retry = null;
        for await (const msg of messagesOf(res, stop.signal)) {
          if (typeof msg.method === "string") {
            if (!("id" in msg)) out.emit(msg); // progress and logs, as the upstream sent them
            continue;
          }
          if (msg.id !== m.id) continue;
          const result = isObject(msg.result) ? msg.result : null;
          if (result?.resultType === "input_required") {
            retry = { inputResponses: await ask(door, session, result, out, stop.signal), requestState: result.requestState };
            break;
          }
          return out.finish(answer(door, m, msg));
        }
        if (retry === null) return out.finish(jsonRpcErrorBody(m.id, -32603, "The MCP server ended its answer without a result"));
      }
      out.finish(jsonRpcErrorBody(m.id, -32603, `The MCP server asked for input more than ${MAX_ROUNDS} times`));
    } catch (err) {
      out.fail(err);
    }
  })();
  return out.response;
}

// internal

/** Sends the client each input request of the round and waits for every answer; the answers by key. */
async function ask(door: Door, session: BoundSession, result: Record<string, unknown>, out: LazyAnswer, signal: AbortSignal): Promise<Record<string, unknown>> {
  const requests = isObject(result.inputRequests) ? result.inputRequests : {};
  const asked: [string, string][] = [];
  for (const [key, r] of Object.entries(requests)) {
    if (!isObject(r) || typeof r.method !== "string") continue;
    const id = `ath-in-${crypto.randomUUID()}`;
    await awaitInput(door.gw, door.token, session.id, id);
    out.emit({ jsonrpc: "2.0", id, method: r.method, params: isObject(r.params) ? r.params : {} });
    asked.push([key, id]);
  }
  const wait = AbortSignal.any([signal, AbortSignal.timeout(INPUT_WAIT_MS)]);
  const answers: Record<string, unknown> = {};
  for (const [key, id] of asked) {
    const given = await takeInput(door.gw, door.token, session.id, id, wait);
    if (given === null) throw new Error("The client did not answer the MCP server's request in time");
    // an error from the client (it cannot do what was asked) is, to a 2026 server, a declined elicitation
    answers[key] = isObject(given.result) ? given.result : { action: "decline" };
  }
  return answers;
}

/** The upstream's final answer as a 2025 client has it. */
function answer(door: Door, m: Message, msg: Record<string, unknown>): Record<string, unknown> {
  if (!isObject(msg.result)) return { jsonrpc: "2.0", id: m.id, error: msg.error };
  let result = msg.result;
  if (m.call!.method === "tools/list") {
    const rw = listRewriteFor(door, new Set([JSON.stringify(m.id)]), true);
    if (rw) result = (filterMessage(msg, rw.ids, { ...rw, hints: false }) as { result: Record<string, unknown> }).result;
  }
  // 2026's own result members and envelope (`resultType`, caching hints, `io.modelcontextprotocol/*` in `_meta`)
  const { resultType: _t, ttlMs: _l, cacheScope: _s, _meta, ...rest } = result;
  const meta = isObject(_meta) ? Object.fromEntries(Object.entries(_meta).filter(([k]) => !k.startsWith("io.modelcontextprotocol/"))) : {};
  return { jsonrpc: "2.0", id: m.id, result: { ...rest, ...(Object.keys(meta).length ? { _meta: meta } : {}) } };
}

/** A refusal of the upstream's (a 4xx with a JSON-RPC error) as the client's answer. */
async function upstreamFailure(m: Message, res: Response): Promise<Record<string, unknown>> {
  for await (const msg of messagesOf(res)) if (isObject(msg.error)) return { jsonrpc: "2.0", id: m.id, error: msg.error };
  return jsonRpcErrorBody(m.id, -32603, `The MCP server answered ${res.status}`);
}
