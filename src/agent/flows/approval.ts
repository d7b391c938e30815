/**
 * Per-request approval on the agent's side (DESIGN §15): read the pending approval out of a 403 APPROVAL_REQUIRED,
 * poll GET /ath/approvals/{id} with the saved token until a person decided (or it expired), and resend the very same
 * request with `X-ATH-Approval`. Shared by `ath proxy --wait-approval` and `ath mcp`'s ath_request.
 */
import { gatewayLink } from "../links.ts";
import { HEADERS, PATHS } from "../../protocol/constants.ts";
import { ApprovalState, isApprovalId, PendingApproval } from "../../protocol/lean.ts";
import { ClientError, oneLine, usageError } from "../errors.ts";
import type { z } from "zod";
import { tokenAuthorization } from "../client.ts";
import { requestJson } from "../http.ts";
import { requireRegistration, requireToken } from "../tokens.ts";
import type { Agent } from "./agent.ts";
import { request, type RequestInput, type RequestResult } from "./request.ts";

export type Decision = "approved" | "denied" | "expired" | "used";

/** The approval a result asks for, when the gateway refused it with APPROVAL_REQUIRED; else undefined. */
export function pendingApproval(r: RequestResult): PendingApproval | undefined {
  if (r.refusal?.code !== "APPROVAL_REQUIRED") return undefined;
  const details = PendingApproval.safeParse(r.refusal.details);
  if (!details.success) return undefined;
  // the page a person is sent to: the gateway's own origin only (r.url is the request to the gateway)
  gatewayLink(details.data.approval_url, r.url);
  return details.data;
}

/** One poll: the approval's state, read with the token the request used. */
export async function approvalState(input: Pick<RequestInput, "target" | "provider">, provider: string, approvalId: string, agent: Agent): Promise<ApprovalState> {
  const { base } = input.target;
  const identity = await agent.identity();
  const token = requireToken(await requireRegistration(agent.home, base, identity.agentId), base, provider, agent.now());
  // requestJson is typed for classic zod; the mini schema parses the same way (and keeps classic zod out of the CLI's start)
  const url = `${base}${PATHS.approvals}/${encodeURIComponent(approvalId)}`;
  // presented as the proxied call presented it: a DPoP-bound token with a proof of this poll (DESIGN §17)
  const headers = await tokenAuthorization("GET", url, token.access_token, token.token_type, identity.key);
  return requestJson(ApprovalState as unknown as z.ZodType<ApprovalState>, { method: "GET", url, headers }, agent.http);
}

/**
 * Polls until the approval is decided or expires (its own `expires_at`, read from the gateway), every `intervalMs`;
 * `onPoll` sees each state. Resolves with the decision; `pending` never comes back.
 */
export async function waitForDecision(
  input: Pick<RequestInput, "target" | "provider">,
  provider: string,
  pending: PendingApproval,
  agent: Agent,
  o: { intervalMs?: number; onPoll?: (s: ApprovalState) => void; signal?: AbortSignal } = {},
): Promise<Decision> {
  const interval = o.intervalMs ?? 1000;
  for (;;) {
    const s = await approvalState(input, provider, pending.approval_id, agent);
    o.onPoll?.(s);
    if (s.status !== "pending") return s.status;
    if (Date.parse(s.expires_at) <= agent.now()) return "expired";
    if (o.signal?.aborted) throw o.signal.reason;
    await Bun.sleep(interval);
  }
}

/** The same request again, carrying the approval. */
export function resend(input: RequestInput, approvalId: string, agent: Agent): Promise<RequestResult> {
  return request({ ...input, headers: { ...input.headers, [HEADERS.approval]: approvalId } }, agent);
}

/** How a front end lets a person approve a request (the CLI: open the page, a spinner; MCP: URL elicitation). */
export interface ApprovalWait {
  /**
   * Told a person must approve `pending`: bring them to its page. False leaves the refusal as it is (a host without
   * elicitation); a throw (the person declined) ends the flow.
   */
  ask(pending: PendingApproval, refused: RequestResult): Promise<boolean>;
  /** The wait is over (decided, or cut short): stop a spinner, tell the host. */
  settled?(decision: Decision | "timeout"): void | Promise<void>;
  /** Wait at most this long (default: until the approval expires); then the refusal is given back as it is. */
  waitSeconds?: number;
  intervalMs?: number;
  signal?: AbortSignal;
}

export interface ApprovedRequest {
  result: RequestResult;
  /** Set when the result is still the refusal: the approval a person has yet to decide (resend with it). */
  pending?: PendingApproval;
}

/**
 * The request-with-approval choreography (DESIGN §15), the one `ath proxy` and `ath mcp`'s ath_request share: send
 * the request (with `approval`, a resend of one a person approved); when the gateway answers APPROVAL_REQUIRED and
 * the front end can `wait`, have it ask the person, poll until they decide, and resend the very same request.
 * Denied is APPROVAL_DENIED, expired or spent APPROVAL_REQUIRED (exit 4); nothing is sent again then.
 * With `wait` and `onChunk`, the body streams only once it is the real answer: a refusal never reaches it first.
 */
export async function requestWithApproval(
  input: RequestInput,
  agent: Agent,
  o: { approval?: string; wait?: ApprovalWait } = {},
): Promise<ApprovedRequest> {
  if (o.approval !== undefined) {
    if (!isApprovalId(o.approval)) throw usageError(`an approval id looks like ath_apr_…, got "${oneLine(o.approval)}"`);
    input = { ...input, headers: { ...input.headers, [HEADERS.approval]: o.approval } };
  }
  const { onChunk, ...held } = input;
  const first = await request(o.wait === undefined ? input : held, agent);
  const pending = pendingApproval(first);
  if (pending === undefined) {
    if (o.wait !== undefined && first.refusal === undefined) onChunk?.(first.body);
    return { result: first };
  }
  if (o.wait === undefined || !(await o.wait.ask(pending, first))) return { result: first, pending };
  const { signal } = o.wait;
  const limit = o.wait.waitSeconds === undefined ? undefined : AbortSignal.timeout(o.wait.waitSeconds * 1000);
  const waitSignal = limit === undefined ? signal : signal === undefined ? limit : AbortSignal.any([signal, limit]);
  let decision: Decision;
  try {
    decision = await waitForDecision(input, first.provider, pending, agent, {
      ...(o.wait.intervalMs === undefined ? {} : { intervalMs: o.wait.intervalMs }),
      ...(waitSignal === undefined ? {} : { signal: waitSignal }),
    });
  } catch (e) {
    if (limit === undefined || !limit.aborted || signal?.aborted) {
      await o.wait.settled?.("timeout");
      throw e;
    }
    await o.wait.settled?.("timeout");
    return { result: first, pending };
  }
  await o.wait.settled?.(decision);
  if (decision !== "approved") {
    const code = decision === "denied" ? "APPROVAL_DENIED" : "APPROVAL_REQUIRED";
    throw new ClientError("refused", code, `${input.method} ${input.path}: the approval ${pending.approval_id} is ${decision}; the request was not sent`, {
      details: { approval_id: pending.approval_id, status: decision },
    });
  }
  return { result: await resend(input, pending.approval_id, agent) };
}
