/**
 * Per-request approval on the agent's side (DESIGN §15): read the pending approval out of a 403 APPROVAL_REQUIRED,
 * poll GET /ath/approvals/{id} with the saved token until a person decided (or it expired), and resend the very same
 * request with `X-ATH-Approval`. Shared by `ath proxy --wait-approval` and `ath mcp`'s ath_request.
 */
import { gatewayLink } from "../links.ts";
import { HEADERS, PATHS } from "../../protocol/constants.ts";
import { ApprovalState, ATHError, PendingApproval } from "../../protocol/lean.ts";
import type { z } from "zod";
import { requestJson } from "../http.ts";
import { requireRegistration, requireToken } from "../tokens.ts";
import type { Agent } from "./agent.ts";
import { parseMaybeJson, request, utf8, type RequestInput, type RequestResult } from "./request.ts";

export type Decision = "approved" | "denied" | "expired" | "used";

/** The approval a result asks for, when the gateway refused it with APPROVAL_REQUIRED; else undefined. */
export function pendingApproval(r: RequestResult): PendingApproval | undefined {
  if (r.refusal?.code !== "APPROVAL_REQUIRED") return undefined;
  const body = ATHError.safeParse(parseMaybeJson(utf8(r.body) ?? ""));
  if (!body.success) return undefined;
  const details = PendingApproval.safeParse(body.data.details);
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
  return requestJson(
    ApprovalState as unknown as z.ZodType<ApprovalState>,
    { method: "GET", url: `${base}${PATHS.approvals}/${encodeURIComponent(approvalId)}`, headers: { authorization: `Bearer ${token.access_token}` } },
    agent.http,
  );
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
