/**
 * An approval-held MCP call (DESIGN §15 in MCP terms, §18): the call is bound by a digest over the method, the tool
 * and its arguments (keys sorted, so the JSON-RPC id, the session and key order do not matter); the same client
 * calling the same tool with the same arguments before the approval expires is the resend, forwarded once.
 */
import type { ApprovalRule } from "../../protocol/index.ts";
import { AthError } from "../../protocol/index.ts";
import type { TokenRecord } from "../../store/types.ts";
import type { Gateway } from "../context.ts";
import { approvalStatus, approvalUrl, passApproval } from "../domain/approvals.ts";
import type { CanonicalWithContent } from "../rules/canonical-request.ts";
import { requestDigest } from "../rules/request-digest.ts";
import type { McpCall } from "./policy.ts";

/** A refusal of one JSON-RPC call, carried back as its JSON-RPC error's `data`. */
export interface McpRefusal {
  ath_error: string;
  reason: string;
  message: string;
  data?: Record<string, unknown>;
}

export function isMcpRefusal(err: unknown): err is McpRefusal {
  return err !== null && typeof err === "object" && typeof (err as McpRefusal).ath_error === "string" && !(err instanceof Error);
}

/** Returns when an approved approval was spent on this call; else throws an McpRefusal (approval required or denied). */
export async function passMcpApproval(gw: Gateway, rule: ApprovalRule, token: TokenRecord, call: McpCall): Promise<void> {
  const method = "MCP";
  const path = `/${call.method}/${call.name ?? ""}`;
  const body = new TextEncoder().encode(canonicalJson(call.arguments));
  // The call as a canonical request (rules/canonical-request.ts): one form, no query, the JSON content type bound.
  const segments = path.split("/").filter(Boolean);
  const request: CanonicalWithContent = {
    method,
    rawPath: path,
    literal: path,
    literalSegments: segments,
    loose: path,
    looseSegments: segments,
    query: "",
    headers: { "content-type": "application/json" },
    body,
  };
  const digest = requestDigest(request);
  const previous = await gw.store.findMcpApproval({ client_id: token.client_id, user_id: token.user_id, provider_id: token.provider_id, digest }, gw.now());
  // A call whose approval is still waiting gets that approval again, not a new one per retry.
  if (previous && approvalStatus(previous, gw.now()) === "pending") {
    throw required(gw, previous.approval_id, new Date(previous.expires_at).toISOString());
  }
  try {
    await passApproval(gw, rule, {
      token,
      request,
      approvalId: previous?.status === "approved" || previous?.status === "denied" ? previous.approval_id : null,
    });
  } catch (err) {
    if (err instanceof AthError && err.code === "APPROVAL_REQUIRED") {
      const d = err.details as { approval_id: string; expires_at: string };
      throw required(gw, d.approval_id, d.expires_at);
    }
    if (err instanceof AthError && err.code === "APPROVAL_DENIED") {
      const refusal: McpRefusal = { ath_error: "APPROVAL_DENIED", reason: "A person denied this call", message: "A person denied this call; it was not sent", data: { approval_id: previous?.approval_id } };
      throw refusal;
    }
    throw err;
  }
}

/** JSON with object keys sorted at every level: the same arguments give the same bytes whatever their order. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value ?? null));
}

// internal

function required(gw: Gateway, approvalId: string, expiresAt: string): McpRefusal {
  const url = approvalUrl(gw, approvalId);
  return {
    ath_error: "APPROVAL_REQUIRED",
    reason: "A person must approve this call",
    message: `A person must approve this call: open ${url}, then call again with the same arguments`,
    data: { approval_id: approvalId, approval_url: url, expires_at: expiresAt },
  };
}

function sortKeys(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sortKeys);
  if (v !== null && typeof v === "object") {
    return Object.fromEntries(Object.keys(v as object).sort().map((k) => [k, sortKeys((v as Record<string, unknown>)[k])]));
  }
  return v;
}
