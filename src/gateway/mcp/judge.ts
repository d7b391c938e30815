/**
 * Judging a POST's JSON-RPC messages (DESIGN §16, §18) with the one call decision (domain/call.ts): each request is an
 * MCP call the decision sees; what it refuses becomes that message's JSON-RPC error, never a forwarded call. MCP's
 * own rules on top: a call the token lacks scope for is a step-up (403 insufficient_scope for the whole POST), and a
 * batch (MCP before 2025-06-18) is forwarded whole or not at all — a call that needs a person's approval, that a
 * policy refuses or that a budget counts must come alone, or spending its approval, or its count, would not mean it
 * was sent.
 */
import { AthError } from "../../protocol/index.ts";
import type { Gateway } from "../context.ts";
import { decideCall, passCall, type ApprovalClaim, type Caller, type Decision } from "../domain/call.ts";
import type { Message } from "./jsonrpc.ts";

/** A refusal of one JSON-RPC call, carried back as its JSON-RPC error's `data`. */
export interface Refusal {
  ath_error: string;
  reason: string;
  message: string;
  data?: Record<string, unknown>;
  /** The approval a person must decide (APPROVAL_REQUIRED): what ath's 2026 round seals into its requestState. */
  approval?: { id: string; url: string; digest: string; expiresAt: number };
}

export interface Judgement {
  /** Set when some call needs more scope: every scope the POST needs, the token's own included. */
  stepUp: string[] | null;
  /** The messages refused, with why; when any is, nothing of the POST is forwarded. */
  refusals: Map<Message, Refusal>;
  /** A call is sent under a person's approval: at most once. */
  approved: boolean;
  /** The calls left in the tightest budget that counted a call of this POST; null when none did. */
  remaining: number | null;
  /** Gives back every budget count taken for this POST: the door calls it when the relay did not send it (`notSent`). */
  unsent: () => void;
}

/**
 * `claim` says how each call names its approval: by default a resend (the 2025 wire: the same call again); the 2026
 * wire's multi-round-trip retries name theirs by ath's sealed requestState.
 */
export async function judge(gw: Gateway, c: Caller, messages: readonly Message[], batch: boolean, claim: (m: Message) => ApprovalClaim = () => "resend"): Promise<Judgement> {
  const decided: [Message, Decision][] = [];
  for (const m of messages) if (m.call) decided.push([m, await decideCall(gw, c, { kind: "mcp", call: m.call, argumentBytes: m.argumentBytes })]);
  const counted: (() => void)[] = [];
  const out: Judgement = { stepUp: null, refusals: new Map(), approved: false, remaining: null, unsent: () => counted.forEach((f) => f()) };
  const lacking = decided.filter(([, d]) => d.kind === "scope" && d.needed.length > 0);
  if (lacking.length) {
    out.stepUp = [...new Set([...c.token.scopes, ...lacking.flatMap(([, d]) => (d.kind === "scope" ? d.needed : []))])];
    return out;
  }
  const holds = (d: Decision) => d.kind === "scope" || d.kind === "deny" || (d.kind === "send" && (d.approval !== null || d.budgets.length > 0));
  if (batch && decided.some(([, d]) => holds(d))) {
    for (const [m, d] of decided) out.refusals.set(m, batchRefusal(d));
    return out;
  }
  for (const [m, d] of decided) {
    if (d.kind === "scope") {
      out.refusals.set(m, { ath_error: "SCOPE_NOT_APPROVED", reason: d.message, message: d.message });
      continue;
    }
    if (!holds(d)) continue;
    try {
      const passed = await passCall(gw, c, { kind: "mcp", call: m.call!, argumentBytes: m.argumentBytes }, d, claim(m));
      if (passed.approval) out.approved = true;
      if (passed.remaining !== null) out.remaining = Math.min(out.remaining ?? Infinity, passed.remaining);
      counted.push(passed.unsent);
    } catch (err) {
      if (!(err instanceof AthError) || !REFUSALS.has(err.code)) {
        out.unsent(); // the POST fails whole: what its other calls counted goes back
        throw err;
      }
      out.refusals.set(m, refusalOf(err));
    }
  }
  return out;
}

/** The ATH refusals a call gets as its JSON-RPC error (anything else — a failing store, a limit — fails the whole POST). */
const REFUSALS = new Set(["POLICY_DENIED", "APPROVAL_REQUIRED", "APPROVAL_DENIED", "BUDGET_EXHAUSTED", "INVALID_REQUEST"]);

// internal

function refusalOf(err: AthError): Refusal {
  const details = (err.details ?? {}) as Record<string, unknown>;
  switch (err.code) {
    case "POLICY_DENIED": {
      const reason = typeof details.reason === "string" ? details.reason : "A policy rule of this gateway refuses this call";
      return { ath_error: err.code, reason, message: reason, data: { rule: details.rule, ...(details.evaluation_error ? { evaluation_error: details.evaluation_error } : {}) } };
    }
    case "APPROVAL_REQUIRED":
      return {
        ath_error: err.code,
        reason: "A person must approve this call",
        message: `A person must approve this call: open ${String(details.approval_url)}, then call again with the same arguments`,
        data: { approval_id: details.approval_id, approval_url: details.approval_url, expires_at: details.expires_at },
        approval: { id: String(details.approval_id), url: String(details.approval_url), digest: String(details.request_digest), expiresAt: Date.parse(String(details.expires_at)) },
      };
    case "APPROVAL_DENIED":
      return { ath_error: err.code, reason: "A person denied this call", message: "A person denied this call; it was not sent", data: { approval_id: details.approval_id } };
    case "BUDGET_EXHAUSTED":
      return { ath_error: err.code, reason: "budget_exhausted", message: err.message, data: { ...details } };
    default:
      return { ath_error: err.code, reason: typeof details.reason === "string" ? details.reason : err.message, message: err.message, data: { ...details } };
  }
}

function batchRefusal(d: Decision): Refusal {
  if (d.kind === "deny") {
    const reason = d.hit.rule.reason ?? "A policy rule of this gateway refuses this call";
    return { ath_error: "POLICY_DENIED", reason, message: reason, data: { rule: { from: d.hit.from, index: d.hit.index } } };
  }
  if (d.kind === "scope") return { ath_error: "SCOPE_NOT_APPROVED", reason: d.message, message: d.message };
  if (d.kind === "send" && d.approval) return { ath_error: "APPROVAL_REQUIRED", reason: "batched", message: "A call that needs a person's approval must be sent alone, not in a batch" };
  if (d.kind === "send" && d.budgets.length) return { ath_error: "POLICY_DENIED", reason: "batched", message: "A call a budget counts must be sent alone, not in a batch" };
  return { ath_error: "POLICY_DENIED", reason: "another call of this batch was refused", message: "Not sent: another call of this batch was refused" };
}
