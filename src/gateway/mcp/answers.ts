/**
 * What a client gets for the calls of its POST that ath refused (DESIGN §18, §21) — nothing of the POST was sent:
 * - on the 2025 wire, each request's JSON-RPC error (`-32001`, `data.ath_error`), an approval-held call as MCP's URL
 *   elicitation (`-32042`) to a client that declared it when it opened the session;
 * - on the 2026 wire, an approval-held call as a multi-round-trip result: `input_required` with ath's URL elicitation
 *   to the approval page (`elicitationId` = the approval id) and its sealed `requestState`; a retry ath cannot honour
 *   as `-32602` (`data.reason`); any other refusal as on the 2025 wire.
 */
import { APPROVAL_INPUT, MCP_ERROR, MCP_REFUSED } from "../../protocol/mcp-front-door.ts";
import type { TokenRecord } from "../../store/types.ts";
import type { Gateway } from "../context.ts";
import { jsonRpcErrorBody } from "../http/errors.ts";
import { note } from "./evidence.ts";
import type { Message, Posted } from "./jsonrpc.ts";
import type { Refusal } from "./judge.ts";
import { sealState } from "./request-state.ts";

/** JSON-RPC error code of MCP's URLElicitationRequiredError (2025-11-25). */
const URL_ELICITATION_REQUIRED = -32042;

/** The 2025 wire's answer to a POST with refused calls; `elicit`: the session declared URL-mode elicitation. */
export async function refusedStateful(gw: Gateway, token: TokenRecord, posted: Posted, refusals: Map<Message, Refusal>, elicit: boolean): Promise<Response> {
  await noteRefusals(gw, token, refusals);
  return rpcAnswer(posted, (m) => {
    const r = refusals.get(m) ?? { ath_error: "POLICY_DENIED", reason: "another call of this batch was refused", message: "Not sent: another call of this batch was refused" };
    const data = { ath_error: r.ath_error, reason: r.reason, ...r.data };
    // A client that declared URL-mode elicitation is asked to open the approval page as one (MCP 2025-11-25).
    if (elicit && r.approval) {
      const elicitations = [{ mode: "url", elicitationId: r.approval.id, url: r.approval.url, message: r.message }];
      return jsonRpcErrorBody(m.id, URL_ELICITATION_REQUIRED, r.message, { ...data, elicitations });
    }
    return errorFor(m, r);
  });
}

/**
 * The 2026 wire's answer to a refused request. `round`: the approval is asked for as a multi-round-trip round (the
 * client declared URL-mode elicitation); `echo`: the state the retry presented, answered again while the same approval
 * is pending; `upstream`: the upstream's own requestState the held request carried (kept inside ath's).
 */
export async function refusedStateless(
  gw: Gateway,
  token: TokenRecord,
  m: Message,
  r: Refusal,
  o: { round: boolean; echo: { state: string; approvalId: string } | null; upstream: string | null },
): Promise<Response> {
  await noteRefusals(gw, token, new Map([[m, r]]));
  if (m.id === undefined) return new Response(null, { status: 202 });
  if (o.round && r.approval) {
    const a = r.approval;
    const requestState = o.echo?.approvalId === a.id ? o.echo.state : await sealState(gw, token, { approvalId: a.id, digest: a.digest, expiresAt: a.expiresAt, upstream: o.upstream });
    const params = { mode: "url", url: a.url, message: r.message, elicitationId: a.id };
    return Response.json({ jsonrpc: "2.0", id: m.id, result: { resultType: "input_required", inputRequests: { [APPROVAL_INPUT]: { method: "elicitation/create", params } }, requestState } });
  }
  return Response.json(errorFor(m, r));
}

// internal

function errorFor(m: Message, r: Refusal) {
  const data = { ath_error: r.ath_error, reason: r.reason, ...r.data };
  // a retry ath cannot honour: its state or its params (DESIGN §21)
  if (r.ath_error === "INVALID_REQUEST") return jsonRpcErrorBody(m.id, MCP_ERROR.invalidParams, r.message, data);
  return jsonRpcErrorBody(m.id, MCP_REFUSED, r.message, data);
}

async function noteRefusals(gw: Gateway, token: TokenRecord, refusals: Map<Message, Refusal>): Promise<void> {
  for (const [m, r] of refusals) await note(gw, token, [m], r.ath_error === "APPROVAL_REQUIRED" ? "approval_required" : "refused");
}

/** One JSON-RPC answer per request of the POST (notifications get none), as one message or a batch. */
function rpcAnswer(posted: Posted, answer: (m: Message) => unknown): Response {
  const answers = posted.messages.filter((m) => m.call && m.id !== undefined).map(answer);
  return new Response(JSON.stringify(posted.batch ? answers : (answers[0] ?? null)), { status: 200, headers: { "content-type": "application/json" } });
}
