/**
 * GET/POST /ath/approvals/{approval_id} (DESIGN §15). The agent polls with its bearer token (or `Accept:
 * application/json`) and gets the JSON status — only for its own approvals (another client: 404). A browser gets the
 * approval page; the person may decide it only if they are its approver: for `approver: "user"`, the browser that
 * holds the signed `ath_user` cookie of the user whose grant the request would use; `admin` approvals are decided in
 * the admin console. Anyone else gets a 403 page. The form carries a CSRF token derived from the (HttpOnly) cookie.
 */
import { AthError, PATHS } from "../../protocol/index.ts";
import type { ApprovalRecord } from "../../store/types.ts";
import type { Call, Gateway } from "../context.ts";
import { constantTimeEqual, hashSecret } from "../crypto/secrets.ts";
import { approvalStatus, decide, shownBody, SHOWN_BODY_BYTES, statusDocument } from "../domain/approvals.ts";
import { readApprover, type ApproverIdentity } from "../domain/approver-cookie.ts";
import { findProvider } from "../domain/providers.ts";
import { requireLiveToken } from "../domain/tokens.ts";
import { bearerToken, readText } from "../http/request.ts";
import { errorResponse, json } from "../http/response.ts";
import { htmlResponse } from "../pages/index.ts";
import { renderApprovalDecidedPage, renderApprovalPage } from "../pages/approval.ts";

const NOT_YOURS =
  "Only the person who gave this agent access can approve its requests, and only from the browser where they gave that consent.";

export async function showApproval(call: Call): Promise<Response> {
  const { gw, req } = call;
  if (wantsJson(req)) {
    try {
      return json(statusDocument(gw, await agentsOwn(call)));
    } catch (err) {
      return errorResponse(err, (m, e) => gw.log.error(m, e));
    }
  }
  const a = await find(gw, call.params.approval_id!);
  const approver = await readApprover(gw, req);
  const allowed = a.approver === "user" && mayDecide(a, approver);
  if (a.approver === "user" && !allowed) throw forbidden(NOT_YOURS);
  return htmlResponse(await page(gw, a, allowed ? approver! : null), { status: 200 });
}

export async function submitApproval(call: Call): Promise<Response> {
  const { gw, req } = call;
  const a = await find(gw, call.params.approval_id!);
  const approver = await readApprover(gw, req);
  if (a.approver !== "user") throw forbidden("An admin decides this request, in the gateway's admin console.");
  if (!mayDecide(a, approver)) throw forbidden(NOT_YOURS);
  let form: URLSearchParams;
  try {
    form = new URLSearchParams(await readText(call));
  } catch {
    throw new AthError("INVALID_REQUEST", "The form could not be read.");
  }
  if (!constantTimeEqual(form.get("csrf") ?? "", csrfToken(a.approval_id, approver!))) {
    throw new AthError("STATE_MISMATCH", "The form expired or did not come from this page. Reload the approval link and try again.");
  }
  const decision = form.get("decision");
  if (decision !== "approve" && decision !== "deny") throw new AthError("INVALID_REQUEST", "Choose Approve or Deny.");
  await decide(gw, a, decision, `user:${a.user_id}`);
  const provider = await findProvider(gw, a.provider_id);
  return htmlResponse(renderApprovalDecidedPage({ decision, providerName: provider?.config.display_name ?? a.provider_id, method: a.method, path: a.path }));
}

// internal

/** The agent's poll: its bearer token, and an approval it asked for (any other: 404, never a hint it exists). */
async function agentsOwn(call: Call): Promise<ApprovalRecord> {
  const token = await requireLiveToken(call.gw, bearerToken(call.req));
  const a = await call.gw.store.getApproval(call.params.approval_id!);
  if (!a || a.client_id !== token.client_id) throw new AthError("NOT_FOUND", "No such approval for this agent");
  return a;
}

function wantsJson(req: Request): boolean {
  if (req.headers.get("authorization") !== null) return true;
  const accept = req.headers.get("accept") ?? "";
  return accept.includes("application/json") && !accept.includes("text/html");
}

async function find(gw: Gateway, id: string): Promise<ApprovalRecord> {
  const a = /^ath_apr_[A-Za-z0-9_-]{1,64}$/.test(id) ? await gw.store.getApproval(id) : null;
  if (!a) throw new AthError("NOT_FOUND", "This approval link is not known to the gateway. Ask the agent for a new one.");
  return a;
}

function mayDecide(a: ApprovalRecord, who: ApproverIdentity | null): boolean {
  return who !== null && who.users.some((u) => u.provider_id === a.provider_id && constantTimeEqual(u.user_id, a.user_id));
}

/** 403: this browser is not the request's approver (the page explains; pages/errors.ts). */
function forbidden(message: string): AthError {
  return new AthError("APPROVAL_REQUIRED", message);
}

/** Double-submit token of the approval form, derived from the secret (HttpOnly) `ath_user` cookie. */
function csrfToken(approvalId: string, who: ApproverIdentity): string {
  return hashSecret(`approval-csrf:${approvalId}:${who.raw}`);
}

async function page(gw: Gateway, a: ApprovalRecord, who: ApproverIdentity | null): Promise<string> {
  const [provider, agent, body] = await Promise.all([findProvider(gw, a.provider_id), gw.store.getAgentByClientId(a.client_id), shownBody(gw, a)]);
  const text = body === null ? null : utf8(body);
  return renderApprovalPage({
    gatewayHost: new URL(gw.opts.baseUrl).host,
    status: approvalStatus(a, gw.now()),
    approver: a.approver,
    ...(who ? { actionUrl: `${PATHS.approvals}/${a.approval_id}`, csrfToken: csrfToken(a.approval_id, who) } : {}),
    ...(a.approver === "admin" ? { notice: "An admin of this gateway decides this request, in its admin console (Approvals)." } : {}),
    provider: { id: a.provider_id, displayName: provider?.config.display_name ?? a.provider_id },
    agent: {
      agentId: a.agent_id,
      developerName: agent?.developer.name ?? "unknown",
      developerId: agent?.developer.id ?? "unknown",
      purpose: agent?.purpose ?? null,
    },
    method: a.method,
    path: a.path,
    query: a.query,
    body: body === null ? null : { text, bytes: a.body_bytes, shownBytes: Math.min(a.body_bytes, SHOWN_BODY_BYTES), contentType: a.content_type },
    expiresAt: new Date(a.expires_at),
    now: new Date(gw.now()),
  });
}

function utf8(bytes: Uint8Array): string | null {
  try {
    // A body cut at 16 KiB may end inside a character: that one is dropped, not the whole text.
    return new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    try {
      return new TextDecoder("utf-8", { fatal: true }).decode(bytes.subarray(0, Math.max(0, bytes.byteLength - 3)));
    } catch {
      return null;
    }
  }
}
