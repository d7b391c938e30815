/**
 * The admin API for per-request approvals (DESIGN §15): list them (newest first, keyset pages, `?status=`), and
 * decide one whose approver is `admin`. A `user` approval is the user's to decide (their consent is what the request
 * would use): an admin sees it but cannot approve it for them.
 */
import { AdminDecision, APPROVAL_STATUSES, isApprovalId, type AdminApproval } from "../../protocol/admin.ts";
import { AthError } from "../../protocol/index.ts";
import type { ApprovalRecord, ApprovalStatus } from "../../store/types.ts";
import type { Call, Gateway } from "../context.ts";
import { approvalStatus, decide } from "../domain/approvals.ts";
import { readJson } from "../http/request.ts";
import { json } from "../http/response.ts";
import { decodeCursor, encodeCursor, iso, readLimit, readQuery } from "./query.ts";

const STATUSES = APPROVAL_STATUSES;

export async function list({ gw, search }: Call): Promise<Response> {
  return json(await listApprovals(gw, search));
}

/** The `GET /ath/admin/approvals` answer for a query string (the console reads it too). */
export async function listApprovals(gw: Gateway, search: string) {
  const q = readQuery(search, ["status"]);
  const status = q.get("status");
  if (status !== undefined && !(STATUSES as readonly string[]).includes(status)) {
    throw new AthError("INVALID_REQUEST", `status must be one of ${STATUSES.join(", ")}`, { field: "status" });
  }
  const limit = readLimit(q);
  const after = decodeCursor(q.get("cursor"), isKey);
  const rows = await gw.store.listApprovals({
    now: gw.now(),
    limit: limit + 1,
    ...(status ? { status: status as ApprovalStatus | "expired" } : {}),
    ...(after ? { after: { created_at: after.c, approval_id: after.i } } : {}),
  });
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  return {
    approvals: page.map((a) => view(gw, a)),
    next_cursor: rows.length > limit && last ? encodeCursor({ c: last.created_at, i: last.approval_id }) : null,
  };
}

export async function decideOne(call: Call): Promise<Response> {
  const { decision } = await readJson(call, AdminDecision);
  return json(await adminDecide(call.gw, call.params.approval_id!, decision));
}

/** An admin's decision (the API and the console's buttons). */
export async function adminDecide(gw: Gateway, approvalId: string, decision: "approve" | "deny") {
  const a = isApprovalId(approvalId) ? await gw.store.getApproval(approvalId) : null;
  if (!a) throw new AthError("NOT_FOUND", `No approval '${approvalId}'`, { approval_id: approvalId });
  if (a.approver !== "admin") {
    throw new AthError("INVALID_REQUEST", "This request is for the user who granted the access to approve, not an admin", { approval_id: approvalId, approver: a.approver });
  }
  return view(gw, await decide(gw, a, decision, "admin"));
}

export function view(gw: Gateway, a: ApprovalRecord): AdminApproval {
  return {
    approval_id: a.approval_id,
    client_id: a.client_id,
    agent_id: a.agent_id,
    user_id: a.user_id,
    provider_id: a.provider_id,
    approver: a.approver,
    method: a.method,
    path: a.path,
    query: a.query,
    request_digest: a.digest,
    body_bytes: a.body_bytes,
    status: approvalStatus(a, gw.now()),
    created_at: new Date(a.created_at).toISOString(),
    expires_at: new Date(a.expires_at).toISOString(),
    decided_at: iso(a.decided_at),
    decided_by: a.decided_by,
  };
}

// internal

function isKey(v: unknown): v is { c: number; i: string } {
  const k = v as { c?: unknown; i?: unknown } | null;
  return typeof k === "object" && k !== null && Number.isSafeInteger(k.c) && typeof k.i === "string" && k.i.length <= 200;
}
