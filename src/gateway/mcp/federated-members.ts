/**
 * Reaching one member of a federated MCP URL (DESIGN §22): the client's message renamed to the upstream's name (tools
 * and prompts by prefix, resources by `ath+{provider}:`), put in the 2026-07-28 envelope, and handed to the member's
 * own door exactly as a 2026 request at `/mcp/{id}` would be (stateless.ts) — so its policy, approvals, budgets, audit,
 * header checks and bridging to a 2025-only upstream are that door's — with the token as the member sees it (the
 * person's grant for it: domain/mcp-federation.ts). A 2025 client's request asks for approvals as 2025 does (a
 * JSON-RPC error; the same call again is the resend). The answer comes back under the client's id, as its wire has it.
 */
import { MCP_META, MCP_REFUSED, MCP_WIRE } from "../../protocol/mcp-front-door.ts";
import type { AgentRecord, TokenRecord } from "../../store/types.ts";
import type { Gateway } from "../context.ts";
import { memberToken } from "../domain/mcp-federation.ts";
import { BearerChallenge, jsonRpcErrorBody } from "../http/errors.ts";
import type { HeldSession } from "../domain/mcp-sessions.ts";
import { awaitInput, takeInput } from "../domain/mcp-session-inputs.ts";
import type { Federation, Member } from "./federation.ts";
import type { Door } from "./forward.ts";
import { checkParamHeaders, standardHeaders } from "./headers.ts";
import { readMessages, type Message } from "./jsonrpc.ts";
import { LazyAnswer } from "./lazy-answer.ts";
import { rewriteParams } from "./rewrite.ts";
import { isObject, messagesOf } from "./sse.ts";
import { stateless } from "./stateless.ts";
import { toolHeaders } from "./tool-schemas.ts";
import { listTools } from "./upstream-calls.ts";
import { upstreamWire } from "./upstream-wire.ts";

/** One request at a federated URL, once its token opened it. */
export interface Fed {
  gw: Gateway;
  req: Request;
  f: Federation;
  token: TokenRecord;
  agent: AgentRecord;
  /** The 2025 wire: the session ath holds for the client (what it declared); null on the 2026 wire. */
  held: HeldSession | null;
  /** The 2025 session declared URL-mode elicitation. */
  urlElicitation: boolean;
  /** The 2025 session: its id and the token it is kept under (the client's answers to ath's requests arrive there). */
  session?: { id: string; keyed: TokenRecord };
}

/** The member's door for this person, or null when they have not connected it. */
export async function memberDoor(fed: Fed, member: Member): Promise<Door | null> {
  const token = await memberToken(fed.gw, fed.agent, fed.token, member.record);
  if (!token) return null;
  return { gw: fed.gw, req: fed.req, record: member.record, caller: { config: member.record.config, agent: fed.agent, token }, token };
}

/** What changes in the message's params on its way to the member (JSON texts by key). */
export type Renamed = Record<string, string>;

/**
 * Sends the client's message `m` (body `text`) to the member, its params changed by `set`; the member's answer as the
 * client's wire has it. `shape` rewrites the final result (a resource's URI as the client asked for it).
 */
export async function sendToMember(
  fed: Fed,
  door: Door,
  m: Message,
  text: string,
  set: Renamed,
  shape: (result: Record<string, unknown>) => Record<string, unknown> = IDENTITY,
): Promise<Response> {
  const params = isObject(m.raw.params) ? m.raw.params : {};
  const own = isObject(params._meta) ? params._meta : {};
  const envelope = fed.held
    ? {
        [MCP_META.protocolVersion]: MCP_WIRE.stateless,
        [MCP_META.clientCapabilities]: fed.held.capabilities,
        [MCP_META.clientInfo]: fed.held.clientInfo,
        ...(fed.held.logLevel ? { [MCP_META.logLevel]: fed.held.logLevel } : {}),
      }
    : {};
  const out = rewriteParams(text, m, { set: { ...set, ...(fed.held ? { _meta: JSON.stringify({ ...own, ...envelope }) } : {}) } });
  const posted = readMessages(new TextEncoder().encode(out));
  const sent = posted.messages[0]!;
  const method = sent.call!.method;
  const sentParams = isObject(sent.raw.params) ? sent.raw.params : {};
  let declared: Awaited<ReturnType<typeof toolHeaders>> = [];
  if (method === "tools/call" && sent.call!.name !== null) {
    const speaks2026 = (await upstreamWire(door)) !== "2025";
    declared = await toolHeaders(fed.gw, door.record.provider_id, sent.call!.name, (cursor) => listTools(door, speaks2026, cursor));
    // a 2026 client mirrored the arguments in Mcp-Param-* headers: checked here, as the member's door checks its own
    if (!fed.held) checkParamHeaders(fed.req.headers, m, declared);
  }
  const headers = new Headers();
  for (const [k, v] of fed.req.headers) if (!DROPPED.test(k)) headers.set(k, v);
  for (const [k, v] of Object.entries(standardHeaders(method, sentParams, MCP_WIRE.stateless, declared))) headers.set(k, v);
  const req = new Request(fed.req.url, { method: "POST", headers, signal: fed.req.signal });
  const send = async (body: string): Promise<Response> => {
    try {
      return await stateless({ ...door, req }, readMessages(new TextEncoder().encode(body)), { resend: fed.held !== null });
    } catch (err) {
      if (err instanceof BearerChallenge) return Response.json(memberChallenge(m, door, err));
      throw err;
    }
  };
  if (!fed.held) {
    const res = await send(out);
    return shape === IDENTITY ? res : relay(fed, m, res, shape);
  }
  return rounds(fed, m, out, sent, send, shape);
}

/** The identity shape: the member's result as it is. */
export const IDENTITY = (r: Record<string, unknown>): Record<string, unknown> => r;

/** The JSON-RPC error of a call to a member the person has not connected. */
export function notConnected(m: Message, member: Member): Record<string, unknown> {
  const tool = `${member.prefix}connect`;
  return jsonRpcErrorBody(m.id, MCP_REFUSED, `${member.record.config.display_name} is not connected for you here: call ${tool} first`, {
    ath_error: "CONSENT_REQUIRED",
    reason: "not_connected",
    provider_id: member.record.provider_id,
    connect_tool: tool,
  });
}

// internal

/** Headers of the client's that are the federated request's own, never the member's. */
const DROPPED = /^(mcp-session-id|mcp-protocol-version|mcp-method|mcp-name|mcp-param-.*|last-event-id|content-length)$/i;

/**
 * A member's challenge (its sign-in is gone, or the call needs scopes the person did not grant it) is no challenge of
 * the federated URL's — the front-door token is good — but that call's JSON-RPC error.
 */
function memberChallenge(m: Message, door: Door, err: BearerChallenge): Record<string, unknown> {
  const id = door.record.provider_id;
  const scope = err.status === 403;
  return jsonRpcErrorBody(m.id, MCP_REFUSED, scope ? `${id}: ${err.message}` : `${id}: the person's sign-in there ended; connect it again`, {
    ath_error: scope ? "SCOPE_NOT_APPROVED" : "CONSENT_REQUIRED",
    reason: scope ? "insufficient_scope" : "upstream_grant_revoked",
    provider_id: id,
  });
}

/** How long ath waits for a 2025 client's answer to one request it made of it (as held-calls.ts). */
const INPUT_WAIT_MS = 240_000;

/** Rounds of input one call may take at most. */
const MAX_ROUNDS = 10;

/**
 * A 2025 client's call: the member's `input_required` rounds (its upstream asking for elicitation, sampling, roots)
 * become 2025's own requests on the answer's stream; the client posts its answers on the session (any instance), and
 * the call is sent again with `inputResponses` and the member's `requestState` until it completes.
 */
async function rounds(fed: Fed, m: Message, out: string, sent: Message, send: (body: string) => Promise<Response>, shape: (r: Record<string, unknown>) => Record<string, unknown>): Promise<Response> {
  const stop = new AbortController();
  const answer = new LazyAnswer({}, () => stop.abort());
  void (async () => {
    let body = out;
    try {
      for (let round = 0; round <= MAX_ROUNDS; round++) {
        const res = await send(body);
        let retry: { inputResponses: Record<string, unknown>; requestState: unknown } | null = null;
        for await (const msg of messagesOf(res, stop.signal)) {
          if (msg.id === undefined || typeof msg.method === "string") {
            answer.emit(msg);
            continue;
          }
          if (JSON.stringify(msg.id) !== JSON.stringify(m.id)) continue;
          const result = isObject(msg.result) ? msg.result : null;
          if (result?.resultType === "input_required" && fed.session) {
            retry = { inputResponses: await ask(fed, result, answer, stop.signal), requestState: result.requestState };
            break;
          }
          return answer.finish(finalAnswer(fed, m, msg, shape), res.status);
        }
        if (retry === null) return answer.finish(jsonRpcErrorBody(m.id, -32603, "The MCP server ended its answer without a result"));
        const set: Record<string, string> = { inputResponses: JSON.stringify(retry.inputResponses) };
        if (typeof retry.requestState === "string") set.requestState = JSON.stringify(retry.requestState);
        body = rewriteParams(out, sent, { set, drop: ["requestState"] });
      }
      answer.finish(jsonRpcErrorBody(m.id, -32603, `The MCP server asked for input more than ${MAX_ROUNDS} times`));
    } catch (err) {
      answer.fail(err);
    }
  })();
  return answer.response;
}

/** Sends the client each input request of the round and waits for every answer; the answers by key. */
async function ask(fed: Fed, result: Record<string, unknown>, out: LazyAnswer, signal: AbortSignal): Promise<Record<string, unknown>> {
  const { gw } = fed;
  const { id: sessionId, keyed } = fed.session!;
  const requests = isObject(result.inputRequests) ? result.inputRequests : {};
  const asked: [string, string][] = [];
  for (const [key, r] of Object.entries(requests)) {
    if (!isObject(r) || typeof r.method !== "string") continue;
    const id = `ath-in-${crypto.randomUUID()}`;
    await awaitInput(gw, keyed, sessionId, id);
    out.emit({ jsonrpc: "2.0", id, method: r.method, params: isObject(r.params) ? r.params : {} });
    asked.push([key, id]);
  }
  const wait = AbortSignal.any([signal, AbortSignal.timeout(INPUT_WAIT_MS)]);
  const answers: Record<string, unknown> = {};
  for (const [key, id] of asked) {
    const given = await takeInput(gw, keyed, sessionId, id, wait);
    if (given === null) throw new Error("The client did not answer the MCP server's request in time");
    answers[key] = isObject(given.result) ? given.result : { action: "decline" };
  }
  return answers;
}

/** The member's answer re-read: notifications passed on, the final answer shaped for the client's wire. */
async function relay(fed: Fed, m: Message, res: Response, shape: (r: Record<string, unknown>) => Record<string, unknown>): Promise<Response> {
  const stop = new AbortController();
  const out = new LazyAnswer({}, () => stop.abort());
  void (async () => {
    try {
      for await (const msg of messagesOf(res, stop.signal)) {
        if (msg.id === undefined || typeof msg.method === "string") {
          out.emit(msg);
          continue;
        }
        if (JSON.stringify(msg.id) !== JSON.stringify(m.id)) continue;
        return out.finish(finalAnswer(fed, m, msg, shape), res.status);
      }
      out.finish(jsonRpcErrorBody(m.id, -32603, "The MCP server ended its answer without a result"), res.ok ? 200 : res.status);
    } catch (err) {
      out.fail(err);
    }
  })();
  return out.response;
}

function finalAnswer(fed: Fed, m: Message, msg: Record<string, unknown>, shape: (r: Record<string, unknown>) => Record<string, unknown>): Record<string, unknown> {
  if (!isObject(msg.result)) {
    const error = isObject(msg.error) ? msg.error : { code: -32603, message: "The MCP server answered without a result" };
    const data = isObject(error.data) ? error.data : {};
    // a 2025 session that declared URL-mode elicitation is asked to open the approval page as one (as at /mcp/{id})
    if (fed.held && fed.urlElicitation && data.ath_error === "APPROVAL_REQUIRED" && typeof data.approval_url === "string") {
      const elicitations = [{ mode: "url", elicitationId: data.approval_id, url: data.approval_url, message: error.message }];
      return { jsonrpc: "2.0", id: m.id, error: { ...error, code: URL_ELICITATION_REQUIRED, data: { ...data, elicitations } } };
    }
    return { jsonrpc: "2.0", id: m.id, error };
  }
  const result = shape(msg.result);
  if (!fed.held) return { jsonrpc: "2.0", id: m.id, result };
  if (result.resultType === "input_required") return jsonRpcErrorBody(m.id, -32603, "The MCP server asks for input mid-call, outside a session");
  // 2026's own result members and envelope, as held-calls.ts strips them for a 2025 client
  const { resultType: _t, ttlMs: _l, cacheScope: _s, _meta, ...rest } = result;
  const meta = isObject(_meta) ? Object.fromEntries(Object.entries(_meta).filter(([k]) => !k.startsWith("io.modelcontextprotocol/"))) : {};
  return { jsonrpc: "2.0", id: m.id, result: { ...rest, ...(Object.keys(meta).length ? { _meta: meta } : {}) } };
}

/** JSON-RPC error code of MCP's URLElicitationRequiredError (2025-11-25). */
const URL_ELICITATION_REQUIRED = -32042;
