/**
 * MCP's 2026-07-28 wire at `/mcp/{id}` (DESIGN §21): one JSON-RPC message per POST, no session, each request carrying
 * its protocol version and client capabilities in `_meta` and mirroring its body in headers. In order:
 * 1. the headers are checked against the body (headers.ts) — before policy, budgets, audit counts or upstream I/O;
 * 2. ath's own multi-round-trip round is taken out: its sealed `ath1.` requestState opened (request-state.ts) and
 *    handed to the one call decision as the approval the retry claims;
 * 3. the call is judged (judge.ts): a refusal is answered here — an approval as `input_required` (answers.ts);
 * 4. what passes is sent — without ath's parts, the upstream's own requestState restored — to an upstream that speaks
 *    2026 as is (forward.ts), or bridged onto an upstream session when it speaks only 2025 (bridge-stateless.ts).
 * The upstream's own `input_required` results pass through untouched.
 */
import { APPROVAL_INPUT, MCP_META } from "../../protocol/mcp-front-door.ts";
import { JSON_RPC, JsonRpcError } from "../http/errors.ts";
import type { ApprovalClaim } from "../domain/call.ts";
import { notSent, type PreparedBody } from "../proxy/relay.ts";
import { insufficientScope } from "./access.ts";
import { refusedStateless } from "./answers.ts";
import { note } from "./evidence.ts";
import { forward, type Door } from "./forward.ts";
import { checkParamHeaders, checkStandardHeaders } from "./headers.ts";
import { readMessages, type Message, type Posted } from "./jsonrpc.ts";
import { judge } from "./judge.ts";
import { isOwnState, openState, stateRefusal, type OpenedState } from "./request-state.ts";
import { rewriteParams } from "./rewrite.ts";
import { toolHeaders } from "./tool-schemas.ts";
import { listTools } from "./upstream-calls.ts";
import { upstreamWire } from "./upstream-wire.ts";
import { bridgeStateless } from "./bridge-stateless.ts";
import { mcpCanonicalRequest } from "../rules/canonical-request.ts";
import { requestDigest } from "../rules/request-digest.ts";

/**
 * `o.resend`: the request stands for a 2025 client's (the federated URL's sessions, federated.ts): an approval is
 * asked for as 2025 asks — a JSON-RPC error, the same call again is the resend — whatever capabilities it declares.
 */
export async function stateless(door: Door, posted: Posted, o: { resend?: boolean } = {}): Promise<Response> {
  const { gw, req, caller, token, record } = door;
  if (posted.batch || posted.messages.length !== 1) throw new JsonRpcError(400, null, JSON_RPC.invalidRequest, "Invalid Request: a 2026-07-28 POST carries one JSON-RPC message");
  const m = posted.messages[0]!;
  if (m.call === null) throw new JsonRpcError(400, null, JSON_RPC.invalidRequest, "Invalid Request: the 2026-07-28 wire takes no JSON-RPC responses from the client");
  checkStandardHeaders(req.headers, m);
  const speaks2026 = (await upstreamWire(door)) !== "2025";
  if (m.call.method === "tools/call" && m.call.name !== null) {
    // the tool's schema says which arguments Mcp-Param-* mirror: a list read (with the caller's token) when none is known
    checkParamHeaders(req.headers, m, await toolHeaders(gw, record.provider_id, m.call.name, (cursor) => listTools(door, speaks2026, cursor)));
  }

  const params = objectOr(m.raw.params);
  const opened = isOwnState(params.requestState) ? await openState(gw, token, params.requestState, m.id) : null;
  const own = opened?.kind === "approval" ? opened : null;
  const bridged = opened?.kind === "bridge" ? opened : null;
  const upstreamState = own ? own.upstream : typeof params.requestState === "string" && opened === null ? params.requestState : null;
  const round = !o.resend && declaresUrlElicitation(params);
  const claim: ApprovalClaim = own ? { state: own } : round ? { state: null } : "resend";
  const judged = await judge(gw, caller, [m], false, () => claim);
  if (judged.stepUp) {
    await note(gw, token, [m], "insufficient_scope");
    throw insufficientScope(gw, record, judged.stepUp);
  }
  const refused = judged.refusals.get(m);
  if (refused) {
    const echo = own && typeof params.requestState === "string" ? { state: params.requestState, approvalId: own.approvalId } : null;
    return refusedStateless(gw, token, m, refused, { round: own !== null || round, echo, upstream: upstreamState });
  }
  const text = withoutOwnRound(posted.text, m, own);
  const body: PreparedBody = { data: new TextEncoder().encode(text).buffer as ArrayBuffer, replayable: true };
  const sending = { method: "POST", body, once: judged.approved, remaining: judged.remaining, stateless: true };
  // counted but never sent (a store or upstream fault before it left): the counts go back (DESIGN §24)
  const giveBack = (err: unknown): never => {
    if (notSent(err)) judged.unsent();
    throw err;
  };
  if (speaks2026) {
    if (bridged) throw stateRefusal(m.id, "request_state_invalid", "The requestState was minted for another MCP server");
    return forward(door, posted, sending).catch(giveBack);
  }
  const digest = requestDigest(mcpCanonicalRequest(m.call.method, m.call.name, m.argumentBytes));
  if (bridged && bridged.digest !== digest) throw stateRefusal(m.id, "request_changed", "The retry's params differ from the request the input was asked for");
  return bridgeStateless(door, { ...m, raw: readMessages(new TextEncoder().encode(text)).messages[0]!.raw }, text, sending, bridged, digest).catch(giveBack);
}

// internal

/** The message without ath's round: its `ath1.` state (the upstream's own put back) and its `inputResponses` entry. */
function withoutOwnRound(text: string, m: Message, own: OpenedState | null): string {
  const params = objectOr(m.raw.params);
  const inputs = objectOr(params.inputResponses);
  if (own === null && !(APPROVAL_INPUT in inputs)) return text;
  return rewriteParams(text, m, {
    drop: own && own.upstream === null ? ["requestState"] : [],
    set: own && own.upstream !== null ? { requestState: JSON.stringify(own.upstream) } : {},
    dropInputs: [APPROVAL_INPUT],
  });
}

/** Whether the request's `_meta` declares URL-mode elicitation among the client's capabilities. */
function declaresUrlElicitation(params: Record<string, unknown>): boolean {
  const caps = objectOr(objectOr(params._meta)[MCP_META.clientCapabilities]);
  const url = objectOr(caps.elicitation).url;
  return url !== null && typeof url === "object";
}

function objectOr(v: unknown): Record<string, unknown> {
  return v !== null && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
}
