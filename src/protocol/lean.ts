/**
 * The wire objects the agent reads often — approvals, the scope intersection, the ATH error body — and the issue
 * formatter, on zod/mini (classic zod alone costs a quarter of the CLI's start-up budget, DESIGN §13). `ath status`
 * loads none of it: the home files' checks (agent/home-files.ts) are written by hand with these same shapes.
 * schemas.ts builds the rest of the protocol on these definitions (zod's classic and mini schemas compose), so each
 * object still has one schema.
 */
import * as z from "zod/mini";
import { ERROR_CODES, type ErrorCode } from "./errors.ts";

export const AgentStatus = z.enum(["approved", "pending", "denied"]);
export type AgentStatus = z.infer<typeof AgentStatus>;

export const ProviderApproval = z.object({
  provider_id: z.string(),
  approved_scopes: z.array(z.string()),
  denied_scopes: z.array(z.string()),
  denial_reason: z.optional(z.string()),
});
export type ProviderApproval = z.infer<typeof ProviderApproval>;

export const ScopeIntersection = z.object({
  agent_approved: z.array(z.string()),
  user_consented: z.array(z.string()),
  effective: z.array(z.string()),
});
export type ScopeIntersection = z.infer<typeof ScopeIntersection>;

/** The body of every ATH error: `{code, message, details?}` with a code of the error table. */
export const ATHError = z.object({
  code: z.enum(ERROR_CODES as [ErrorCode, ...ErrorCode[]]),
  message: z.string(),
  details: z.optional(z.record(z.string(), z.unknown())),
});
export type ATHError = z.infer<typeof ATHError>;

/** The approval id grammar (DESIGN §15), written once: `ath_apr_` and up to 64 URL-safe characters. */
export const APPROVAL_ID = /^ath_apr_[A-Za-z0-9_-]{1,64}$/;
export const isApprovalId = (v: string): boolean => APPROVAL_ID.test(v);

/**
 * A request waiting for a person's approval (DESIGN §15): the `details` of 403 APPROVAL_REQUIRED, and what the
 * agent's poll of GET /ath/approvals/{id} answers (`status`).
 */
export const PendingApproval = z.object({
  approval_id: z.string(),
  approval_url: z.string(),
  expires_at: z.string(),
  request_digest: z.string(),
  approver: z.optional(z.enum(["user", "admin"])),
});
export type PendingApproval = z.infer<typeof PendingApproval>;

export const ApprovalState = z.object({
  approval_id: z.string(),
  status: z.enum(["pending", "approved", "denied", "expired", "used"]),
  expires_at: z.string(),
});
export type ApprovalState = z.infer<typeof ApprovalState>;

/** Formats zod issues as `path: message` lines, e.g. `requested_providers.0.scopes: Expected array`. */
export function formatIssues(error: { issues: readonly { path: readonly PropertyKey[]; message: string }[] }, prefix = ""): string[] {
  // a message of several lines is several problems at one path (each unknown field of an object)
  return error.issues.flatMap((i) => {
    const path = [prefix, ...i.path.map(String)].filter(Boolean).join(".");
    return i.message.split("\n").map((line) => (path ? `${path}: ${line}` : line));
  });
}
