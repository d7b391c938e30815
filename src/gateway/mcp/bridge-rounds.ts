/**
 * The answer of a 2025 upstream to a bridged request, as a 2026 client must get it (DESIGN §21): read message by
 * message as it streams — progress passed on, logs only when the client asked for them (`_meta` logLevel, at or above
 * it), the final response under the client's id with `resultType` and caching hints (tools/list filtered per person
 * first, as at the door).
 *
 * A request the upstream makes of the client mid-call (`elicitation/create`, `sampling/createMessage`, `roots/list`)
 * has no 2026 equivalent in flight: the call becomes a multi-round-trip round. The requests that arrive together (within
 * ROUND_GRACE_MS of each other) are the round's `inputRequests`, keyed by a digest of what they ask; the upstream call is
 * cancelled, and the client gets `input_required` with ath's sealed state carrying every answer given so far. Its retry
 * runs the call again, and the upstream's requests are answered from the state — the same request, the same key —
 * until one is new (the next round) or the result comes. A call sent under a person's approval is sent once, so it
 * cannot run again: its upstream's requests are declined. A request for a capability the client did not declare is
 * -32021 with HTTP 400 (when nothing was streamed yet).
 */
import { MCP_ERROR } from "../../protocol/mcp-front-door.ts";
import { jsonRpcErrorBody } from "../http/errors.ts";
import { listRewriteFor, type Door } from "./forward.ts";
import type { Message } from "./jsonrpc.ts";
import { sealBridge } from "./request-state.ts";
import { LazyAnswer } from "./lazy-answer.ts";
import { isObject, messagesOf } from "./sse.ts";
import { filterMessage, LIST_TTL_MS } from "./tools-list.ts";
import { onSession } from "./upstream-session.ts";

/** How long after one upstream request ath waits for others of the same round. */
export const ROUND_GRACE_MS = 100;

export interface Bridged {
  m: Message;
  method: string;
  upstreamId: string;
  capabilities: Record<string, unknown>;
  logLevel: unknown;
  /** Answers to the upstream's requests, by key (from ath's state and the retry's inputResponses). */
  answers: Record<string, unknown>;
  /** The request's digest (§16): what ath's state binds. */
  digest: string;
  once: boolean;
}

export async function translateAnswer(door: Door, res: Response, b: Bridged): Promise<Response> {
  if (!res.ok) return new Response(res.body, { status: res.status, headers: { "content-type": res.headers.get("content-type") ?? "application/json" } });
  const out = new LazyAnswer();
  const stop = new AbortController();
  const it = messagesOf(res, stop.signal)[Symbol.asyncIterator]();
  void (async () => {
    const asked: { key: string; method: string; params: Record<string, unknown>; id: unknown }[] = [];
    try {
      for (;;) {
        const next = it.next();
        const got = asked.length ? await Promise.race([next, Bun.sleep(ROUND_GRACE_MS).then(() => null)]) : await next;
        if (got === null) return await endRound(door, b, out, asked, stop);
        if (got.done) return out.finish(jsonRpcErrorBody(b.m.id, -32603, "The MCP server ended its answer without a result"));
        const msg = got.value;
        if (typeof msg.method === "string" && "id" in msg) {
          const asks = await request(door, b, msg, out);
          if (asks) asked.push(asks);
          if (out.done) return;
          continue;
        }
        if (typeof msg.method === "string") {
          if (passes(msg, b.logLevel)) out.emit(msg);
          continue;
        }
        if (msg.id === b.upstreamId) return out.finish(await final(door, b, msg));
      }
    } catch (err) {
      out.fail(err);
    } finally {
      stop.abort();
    }
  })();
  return out.response;
}

// internal

/** The capability each request the upstream may make of the client needs. */
const NEEDS: Record<string, string> = { "elicitation/create": "elicitation", "sampling/createMessage": "sampling", "roots/list": "roots" };
const LISTS = new Set(["tools/list", "prompts/list", "resources/list", "resources/templates/list"]);
const LEVELS = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"];

/** One request of the upstream's: answered from `answers`, declined, or asked of the client (returned). */
async function request(door: Door, b: Bridged, msg: Record<string, unknown>, out: LazyAnswer) {
  const method = msg.method as string;
  const params = isObject(msg.params) ? msg.params : {};
  const reply = (body: Record<string, unknown>) => onSession(door, b.capabilities, JSON.stringify({ jsonrpc: "2.0", id: msg.id, ...body })).then(({ res }) => res.body?.cancel());
  if (method === "ping") return void (await reply({ result: {} }));
  const needs = NEEDS[method];
  if (needs === undefined || b.once) return void (await reply({ error: { code: MCP_ERROR.methodNotFound, message: b.once ? "ath sends a call a person approved once: it cannot ask the client for input" : `ath does not relay ${method}` } }));
  if (!(needs in b.capabilities)) {
    await reply({ error: { code: MCP_ERROR.missingCapability, message: `The client did not declare ${needs}` } });
    await cancel(door, b);
    out.finish(jsonRpcErrorBody(b.m.id, MCP_ERROR.missingCapability, `The server asked for ${needs}, which the client did not declare`, { requiredCapabilities: { [needs]: {} } }), 400);
    return;
  }
  const key = keyOf(method, params);
  if (key in b.answers) return void (await reply({ result: b.answers[key] as Record<string, unknown> }));
  return { key, method, params: withoutMeta(params), id: msg.id };
}

/** Ends the round: the upstream call cancelled, the client asked for every request of the round. */
async function endRound(door: Door, b: Bridged, out: LazyAnswer, asked: { key: string; method: string; params: Record<string, unknown> }[], stop: AbortController): Promise<void> {
  stop.abort();
  await cancel(door, b);
  const inputRequests = Object.fromEntries(asked.map((a) => [a.key, { method: a.method, params: a.params }]));
  const requestState = await sealBridge(door.gw, door.token, { digest: b.digest, answers: b.answers });
  out.finish({ jsonrpc: "2.0", id: b.m.id, result: { resultType: "input_required", inputRequests, requestState } });
}

async function cancel(door: Door, b: Bridged): Promise<void> {
  const { res } = await onSession(door, b.capabilities, JSON.stringify({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: b.upstreamId, reason: "waiting for the client's input" } }));
  await res.body?.cancel();
}

/** The upstream's final response as the client's: its id, `resultType`, lists filtered and hinted. */
async function final(door: Door, b: Bridged, msg: Record<string, unknown>): Promise<Record<string, unknown>> {
  if (!isObject(msg.result)) return { jsonrpc: "2.0", id: b.m.id, error: msg.error };
  let result = msg.result;
  if (b.method === "tools/list") {
    const rw = listRewriteFor(door, new Set([JSON.stringify(b.upstreamId)]), true);
    if (rw) result = ((filterMessage(msg, rw.ids, { ...rw, hints: false }) as { result: Record<string, unknown> }).result);
  }
  const hints = LISTS.has(b.method)
    ? { ttlMs: typeof result.ttlMs === "number" && result.ttlMs >= 0 ? Math.min(result.ttlMs, LIST_TTL_MS) : LIST_TTL_MS, cacheScope: "private" }
    : b.method === "resources/read"
      ? { ttlMs: 0, cacheScope: "private" }
      : {};
  return { jsonrpc: "2.0", id: b.m.id, result: { ...result, resultType: typeof result.resultType === "string" ? result.resultType : "complete", ...hints } };
}

/** A notification the client gets: progress always, logs at or above the level it asked for (none without one). */
function passes(msg: Record<string, unknown>, level: unknown): boolean {
  if (msg.method === "notifications/progress") return true;
  if (msg.method !== "notifications/message" || typeof level !== "string") return false;
  const given = isObject(msg.params) ? LEVELS.indexOf(String(msg.params.level)) : -1;
  return given >= LEVELS.indexOf(level) && LEVELS.includes(level);
}

/** The key of an upstream request: the same request (its method and params, `_meta` aside) gets the same key. */
function keyOf(method: string, params: Record<string, unknown>): string {
  return `ath_in_${new Bun.CryptoHasher("sha256").update(`${method}\n${canonical(withoutMeta(params))}`).digest("base64url").slice(0, 22)}`;
}

function withoutMeta(params: Record<string, unknown>): Record<string, unknown> {
  const { _meta: _, ...rest } = params;
  return rest;
}

function canonical(v: unknown): string {
  if (v === null || typeof v !== "object") return JSON.stringify(v) ?? "null";
  if (Array.isArray(v)) return `[${v.map(canonical).join(",")}]`;
  return `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${canonical((v as Record<string, unknown>)[k])}`).join(",")}}`;
}
