/**
 * Human approval of individual requests (DESIGN §15): which requests need one, asking for it (403 APPROVAL_REQUIRED
 * with a fresh approval), deciding it, and spending it on the one resend whose digest matches — a single guarded
 * UPDATE, so of two racing resends exactly one is forwarded.
 */
import { AthError, PATHS, PREFIX, type ApprovalRule, type ProviderConfig } from "../../protocol/index.ts";
import { isApprovalId } from "../../protocol/lean.ts";
import type { AgentRecord, ApprovalRecord, TokenRecord } from "../../store/types.ts";
import type { Gateway } from "../context.ts";
import { mintSecret } from "../crypto/secrets.ts";
import type { CanonicalWithContent } from "../rules/canonical-request.ts";
import { requestDigest } from "../rules/request-digest.ts";
import { actOf, audit } from "./audit.ts";
import { findTokenById } from "./tokens.ts";

/** How much of a body the approval page shows (and so the store keeps, sealed). */
export const SHOWN_BODY_BYTES = 16 * 1024;
/** `--max-approval-body` default: larger bodies of requests that need an approval are refused (413). */
export const MAX_APPROVAL_BODY_DEFAULT = 1024 * 1024;

/**
 * Pending approvals one client may hold at once: each refused request makes one, and each waits for a person —
 * beyond this the agent is asking faster than anyone decides (429, until some are decided or expire).
 */
export const MAX_PENDING_PER_CLIENT = 50;

export type ApprovalView = "pending" | "approved" | "denied" | "expired" | "used";

/**
 * The first rule, the provider's before the agent's own, whose `match` holds (`matches`: a deny-list — either form of
 * an HTTP request, DESIGN §16; the key of an MCP call); null when the call needs no approval.
 */
export function approvalRuleFor(config: ProviderConfig, agent: AgentRecord | null, matches: (match: readonly string[]) => boolean): ApprovalRule | null {
  return firstMatching(config.approval_rules, matches) ?? firstMatching(agent?.approval_rules, matches);
}

function firstMatching(rules: readonly ApprovalRule[] | null | undefined, matches: (match: readonly string[]) => boolean): ApprovalRule | null {
  if (rules) for (const rule of rules) if (matches(rule.match)) return rule;
  return null;
}

/** The approval an id names (any well-formed `ath_apr_…`), or null. */
export async function findApproval(gw: Gateway, id: string): Promise<ApprovalRecord | null> {
  return isApprovalId(id) ? gw.store.getApproval(id) : null;
}

/** What a person or the agent sees: pending/approved past their expiry are `expired`. */
export function approvalStatus(a: ApprovalRecord, now: number): ApprovalView {
  return (a.status === "pending" || a.status === "approved") && a.expires_at <= now ? "expired" : a.status;
}

export interface ProxiedRequest {
  token: TokenRecord;
  /** The canonical request (rules/canonical-request.ts) with its bound headers and body. */
  request: CanonicalWithContent;
  /** The X-ATH-Approval header, if sent. */
  approvalId: string | null;
}

/**
 * Lets the request through when it carries an approval that is approved, unexpired, unused and made for exactly this
 * request (spending it); else throws APPROVAL_DENIED (it was denied) or APPROVAL_REQUIRED with a fresh approval.
 */
export async function passApproval(gw: Gateway, rule: ApprovalRule, r: ProxiedRequest): Promise<void> {
  const digest = requestDigest(r.request);
  const { token } = r;
  let previous: { approval_id: string; reason: string } | undefined;
  if (r.approvalId !== null) {
    const id = r.approvalId;
    const spent = isApprovalId(id)
      ? await gw.store.consumeApproval(id, { client_id: token.client_id, user_id: token.user_id, provider_id: token.provider_id, digest }, gw.now())
      : null;
    if (spent) {
      await audit(gw, "approval.used", { ...who(spent), data: { ...actOf(token), approval_id: id, digest } });
      return;
    }
    const a = /^ath_apr_/.test(id) ? await gw.store.getApproval(id) : null;
    const mine = a !== null && a.client_id === token.client_id;
    if (mine && a.status === "denied") {
      throw new AthError("APPROVAL_DENIED", "A person denied this request; it will not be forwarded", { approval_id: id, request_digest: a.digest });
    }
    previous = { approval_id: id, reason: !mine ? "unknown" : reasonRefused(a, digest, token, gw.now()) };
  }
  throw approvalRequired(gw, await createApproval(gw, rule, r, digest), digest, previous);
}

/** 403 APPROVAL_REQUIRED naming the approval a person must decide (DESIGN §15). */
function approvalRequired(gw: Gateway, a: ApprovalRecord, digest: string, previous?: { approval_id: string; reason: string }): AthError {
  const url = approvalUrl(gw, a.approval_id);
  return new AthError("APPROVAL_REQUIRED", `A person must approve this ${a.method === "MCP" ? "call" : `${a.method} request`}: open ${url}`, {
    approval_id: a.approval_id,
    approval_url: url,
    expires_at: new Date(a.expires_at).toISOString(),
    request_digest: digest,
    approver: a.approver,
    ...(previous ? { previous } : {}),
  });
}

/**
 * The resend of a call that carries no approval id (an MCP call, DESIGN §18): the same client, person and provider
 * sending the same bytes (`request`'s digest) before the approval expires. An approved one is spent on it; a denied one
 * refuses it; one still waiting is answered again (not a new approval per retry); else a new approval is asked for.
 */
export async function passResend(gw: Gateway, rule: ApprovalRule, token: TokenRecord, request: CanonicalWithContent): Promise<void> {
  const digest = requestDigest(request);
  const previous = await gw.store.findMcpApproval({ client_id: token.client_id, user_id: token.user_id, provider_id: token.provider_id, digest }, gw.now());
  if (previous && approvalStatus(previous, gw.now()) === "pending") throw approvalRequired(gw, previous, digest);
  const decided = previous?.status === "approved" || previous?.status === "denied" ? previous.approval_id : null;
  await passApproval(gw, rule, { token, request, approvalId: decided });
}

/**
 * A multi-round-trip retry (MCP 2026-07-28, DESIGN §21): `state` is the approval its sealed requestState names (null:
 * the call carried none of ath's — the first round). The first round gets the approval still pending for the same
 * request (same client, person, provider, digest), else a new one: 403 APPROVAL_REQUIRED, never spending one. A retry
 * gets the SAME approval back while it is pending; once approved it is spent by the one guarded consume, so of any
 * number of concurrent retries exactly one is forwarded; denied → APPROVAL_DENIED. A retry whose request changed, or
 * whose approval is used, expired or another's, is refused (400 INVALID_REQUEST, `details.reason`
 * request_changed | request_state_used | request_state_invalid): nothing is forwarded and no approval is made.
 */
export async function passRetry(gw: Gateway, rule: ApprovalRule, token: TokenRecord, request: CanonicalWithContent, state: { approvalId: string; digest: string } | null): Promise<void> {
  const digest = requestDigest(request);
  const now = gw.now();
  if (state === null) {
    const pending = await gw.store.findMcpApproval({ client_id: token.client_id, user_id: token.user_id, provider_id: token.provider_id, digest }, now);
    if (pending && approvalStatus(pending, now) === "pending") throw approvalRequired(gw, pending, digest);
    throw approvalRequired(gw, await createApproval(gw, rule, { token, request, approvalId: null }, digest), digest);
  }
  const refuse = (reason: string, message: string) => new AthError("INVALID_REQUEST", message, { reason, approval_id: state.approvalId });
  if (state.digest !== digest) throw refuse("request_changed", "The retry's params differ from the request the person was asked to approve");
  const a = isApprovalId(state.approvalId) ? await gw.store.getApproval(state.approvalId) : null;
  if (a === null || a.client_id !== token.client_id || a.user_id !== token.user_id || a.provider_id !== token.provider_id || a.digest !== digest) {
    throw refuse("request_state_invalid", "The requestState names no approval of this request");
  }
  const status = approvalStatus(a, now);
  if (status === "pending") throw approvalRequired(gw, a, digest);
  if (status === "denied") throw new AthError("APPROVAL_DENIED", "A person denied this request; it will not be forwarded", { approval_id: a.approval_id, request_digest: digest });
  if (status === "approved") {
    const spent = await gw.store.consumeApproval(a.approval_id, { client_id: token.client_id, user_id: token.user_id, provider_id: token.provider_id, digest }, now);
    if (spent) {
      await audit(gw, "approval.used", { ...who(spent), data: { ...actOf(token), approval_id: a.approval_id, digest } });
      return;
    }
  }
  if (status === "expired") throw refuse("request_state_invalid", "The approval this requestState names expired");
  throw refuse("request_state_used", "The approval this requestState names was already used");
}

export function approvalUrl(gw: Gateway, approvalId: string): string {
  return `${gw.opts.baseUrl}${PATHS.approvals}/${approvalId}`;
}

/** Approves or denies a pending approval; NOT_FOUND/APPROVAL_* errors when it cannot be decided any more. */
export async function decide(gw: Gateway, a: ApprovalRecord, decision: "approve" | "deny", by: string): Promise<ApprovalRecord> {
  const decided = await gw.store.decideApproval(a.approval_id, decision === "approve" ? "approved" : "denied", by, gw.now());
  if (!decided) {
    const now = (await gw.store.getApproval(a.approval_id)) ?? a;
    throw new AthError("INVALID_REQUEST", `This request is ${approvalStatus(now, gw.now())} and can no longer be decided.`, {
      approval_id: a.approval_id,
      status: approvalStatus(now, gw.now()),
    });
  }
  await audit(gw, decision === "approve" ? "approval.approved" : "approval.denied", {
    ...who(decided),
    data: { ...actOf(await findTokenById(gw, decided.token_id)), approval_id: decided.approval_id, digest: decided.digest, by, method: decided.method, path: decided.path },
  });
  return decided;
}

/** The body as the page shows it: the first 16 KiB (sealed at rest), or null when there was none. */
export async function shownBody(gw: Gateway, a: ApprovalRecord): Promise<Uint8Array | null> {
  if (a.body_sealed === null) return null;
  return Uint8Array.fromBase64(await gw.sealer.open(a.body_sealed, aad(a.approval_id)));
}

/** The bound headers the approval was made for (DESIGN §16: the page shows them), lower-case names; {} when none. */
export async function shownHeaders(gw: Gateway, a: ApprovalRecord): Promise<Record<string, string>> {
  if (a.headers_sealed === null) return {};
  return JSON.parse(await gw.sealer.open(a.headers_sealed, headersAad(a.approval_id))) as Record<string, string>;
}

/** The request an approval was made for, as data: what will be sent (the approval page and the console render it). */
export interface ApprovedRequest {
  method: string;
  /** The path as sent (percent-encoded). */
  path: string;
  /** The query as sent, without `?`. */
  query: string;
  /** Bound headers, lower-case names. */
  headers: Readonly<Record<string, string>>;
  /** null: no body. `shown` is the first 16 KiB. */
  body: { shown: Uint8Array; bytes: number; contentType: string | null } | null;
}

/** The request as the approval page and the console show it: what will be sent. */
export async function requestView(gw: Gateway, a: ApprovalRecord): Promise<ApprovedRequest> {
  const [body, headers] = await Promise.all([shownBody(gw, a), shownHeaders(gw, a)]);
  return { method: a.method, path: a.path, query: a.query, headers, body: body === null ? null : { shown: body, bytes: a.body_bytes, contentType: a.content_type } };
}

/** The agent's view of its approval (GET /ath/approvals/{id} with its bearer token). */
export function statusDocument(gw: Gateway, a: ApprovalRecord) {
  return {
    approval_id: a.approval_id,
    status: approvalStatus(a, gw.now()),
    approver: a.approver,
    provider_id: a.provider_id,
    method: a.method,
    path: a.path,
    query: a.query,
    request_digest: a.digest,
    approval_url: approvalUrl(gw, a.approval_id),
    created_at: new Date(a.created_at).toISOString(),
    expires_at: new Date(a.expires_at).toISOString(),
    decided_at: a.decided_at === null ? null : new Date(a.decided_at).toISOString(),
  };
}

// internal

async function createApproval(gw: Gateway, rule: ApprovalRule, r: ProxiedRequest, digest: string): Promise<ApprovalRecord> {
  const now = gw.now();
  if ((await gw.store.countPendingApprovals(r.token.client_id, now)) >= MAX_PENDING_PER_CLIENT) {
    throw new AthError("RATE_LIMITED", `This agent already has ${MAX_PENDING_PER_CLIENT} requests waiting for a person's approval`, { reason: "pending_approvals", limit: MAX_PENDING_PER_CLIENT }, {
      headers: { "retry-after": "60" },
    });
  }
  const id = mintSecret(PREFIX.approval, 16);
  const { method, rawPath, query, body, headers } = r.request;
  const shown = body.byteLength ? body.subarray(0, SHOWN_BODY_BYTES) : null;
  const headerNames = Object.keys(headers);
  const a: ApprovalRecord = {
    approval_id: id,
    client_id: r.token.client_id,
    agent_id: r.token.agent_id,
    user_id: r.token.user_id,
    provider_id: r.token.provider_id,
    token_id: r.token.token_id,
    approver: rule.approver,
    method,
    path: rawPath,
    query,
    digest,
    body_sealed: shown ? await gw.sealer.seal(shown.toBase64(), aad(id)) : null,
    headers_sealed: headerNames.length ? await gw.sealer.seal(JSON.stringify(headers), headersAad(id)) : null,
    body_bytes: body.byteLength,
    content_type: headers["content-type"]?.slice(0, 200) ?? null,
    status: "pending",
    decided_by: null,
    decided_at: null,
    used_at: null,
    created_at: now,
    expires_at: now + rule.ttl * 1000,
  };
  await gw.store.createApproval(a);
  await audit(gw, "approval.requested", {
    ...who(a),
    data: { ...actOf(r.token), approval_id: id, digest, approver: a.approver, method: a.method, path: a.path, body_bytes: a.body_bytes },
  });
  return a;
}

function reasonRefused(a: ApprovalRecord, digest: string, token: TokenRecord, now: number): string {
  if (a.digest !== digest || a.user_id !== token.user_id || a.provider_id !== token.provider_id) return "digest_mismatch";
  return approvalStatus(a, now);
}

function who(a: ApprovalRecord) {
  return { client_id: a.client_id, agent_id: a.agent_id, provider_id: a.provider_id, user_id: a.user_id };
}

function aad(approvalId: string): string {
  return `approval:${approvalId}:body`;
}

function headersAad(approvalId: string): string {
  return `approval:${approvalId}:headers`;
}
