/**
 * Row ↔ record mapping shared by both drivers: JSON text columns are parsed, integers normalised (PostgreSQL
 * returns BIGINT as a string), and the column lists used by the INSERT statements live next to the mappers.
 */
import type { ApprovalRule, BudgetRule, PolicyRule } from "../protocol/index.ts";
import type { Delegation } from "./identity-types.ts";
import type { AgentRecord, ApprovalRecord, AuditEvent, GrantRecord, ProviderRecord, RefreshTokenRecord, SessionRecord, TokenRecord } from "./types.ts";

export type Row = Record<string, unknown>;

export const AGENT_COLUMNS = [
  "client_id", "client_secret_hash", "agent_id", "developer", "purpose", "redirect_uris", "status", "approvals",
  "approval_expires", "created_at",
] as const satisfies readonly (keyof AgentRecord)[];

export const SESSION_COLUMNS = [
  "session_id", "handle", "client_id", "agent_id", "provider_id", "requested_scopes", "agent_state",
  "user_redirect_uri", "resource", "pkce_verifier_sealed", "code_challenge", "upstream_state", "status",
  "binding_hash", "code_hash", "user_id", "consented_scopes", "grant_id", "created_at", "expires_at",
] as const satisfies readonly (keyof SessionRecord)[];

export const TOKEN_COLUMNS = [
  "token_hash", "token_id", "client_id", "agent_id", "user_id", "provider_id", "scopes", "grant_id", "created_at", "expires_at",
  "revoked_at", "family_id", "jkt", "delegation", "resource",
] as const satisfies readonly (keyof TokenRecord)[];

export const REFRESH_COLUMNS = [
  "refresh_hash", "family_id", "client_id", "oauth_client_id", "resource", "agent_id", "user_id", "provider_id", "scopes",
  "grant_id", "jkt", "family_expires_at", "expires_at", "created_at", "spent_at", "revoked_at",
] as const satisfies readonly (keyof RefreshTokenRecord)[];

export function toRefreshToken(r: Row): RefreshTokenRecord {
  return {
    refresh_hash: str(r.refresh_hash),
    family_id: str(r.family_id),
    client_id: str(r.client_id),
    oauth_client_id: strOrNull(r.oauth_client_id),
    resource: strOrNull(r.resource),
    agent_id: str(r.agent_id),
    user_id: str(r.user_id),
    provider_id: str(r.provider_id),
    scopes: json(r.scopes),
    grant_id: strOrNull(r.grant_id),
    jkt: strOrNull(r.jkt),
    family_expires_at: num(r.family_expires_at),
    expires_at: num(r.expires_at),
    created_at: num(r.created_at),
    spent_at: numOrNull(r.spent_at),
    revoked_at: numOrNull(r.revoked_at),
  };
}

export const GRANT_COLUMNS = [
  "grant_id", "provider_id", "user_id", "agent_id", "access_token_sealed", "refresh_token_sealed", "expires_at",
  "scope", "status", "version", "refresh_owner", "refresh_lease_until", "created_at", "updated_at",
] as const satisfies readonly (keyof GrantRecord)[];

/** The values of `record` in `columns` order, objects and arrays as JSON text. */
export function values<T extends object>(record: T, columns: readonly (keyof T)[]): unknown[] {
  return columns.map((c) => {
    const v = record[c];
    return v !== null && typeof v === "object" ? JSON.stringify(v) : (v ?? null);
  });
}

export function toProvider(r: Row): ProviderRecord {
  return {
    provider_id: str(r.provider_id),
    config: json(r.config),
    client_secret_sealed: str(r.client_secret_sealed),
    source: str(r.source) as ProviderRecord["source"],
    updated_at: num(r.updated_at),
  };
}

export function toAgent(r: Row): AgentRecord {
  return {
    client_id: str(r.client_id),
    client_secret_hash: str(r.client_secret_hash),
    agent_id: str(r.agent_id),
    developer: json(r.developer),
    purpose: strOrNull(r.purpose),
    redirect_uris: r.redirect_uris == null ? null : json(r.redirect_uris),
    status: str(r.status) as AgentRecord["status"],
    approvals: json(r.approvals),
    approval_expires: num(r.approval_expires),
    created_at: num(r.created_at),
    // absent unless an admin set some: records compare equal to what was created
    ...(r.approval_rules == null ? {} : { approval_rules: json<ApprovalRule[]>(r.approval_rules) }),
    ...(r.policy == null ? {} : { policy: json<PolicyRule[]>(r.policy) }),
    ...(r.budgets == null ? {} : { budgets: json<BudgetRule[]>(r.budgets) }),
    ...(r.pending_approvals == null ? {} : { pending_approvals: json<{ provider_id: string; scopes: string[] }[]>(r.pending_approvals) }),
  };
}

export const APPROVAL_COLUMNS = [
  "approval_id", "client_id", "agent_id", "user_id", "provider_id", "token_id", "approver", "method", "path", "query",
  "digest", "body_sealed", "body_bytes", "content_type", "status", "decided_by", "decided_at", "used_at", "created_at",
  "expires_at", "headers_sealed",
] as const satisfies readonly (keyof ApprovalRecord)[];

export function toApproval(r: Row): ApprovalRecord {
  return {
    approval_id: str(r.approval_id),
    client_id: str(r.client_id),
    agent_id: str(r.agent_id),
    user_id: str(r.user_id),
    provider_id: str(r.provider_id),
    token_id: str(r.token_id),
    approver: str(r.approver) as ApprovalRecord["approver"],
    method: str(r.method),
    path: str(r.path),
    query: str(r.query),
    digest: str(r.digest),
    body_sealed: strOrNull(r.body_sealed),
    headers_sealed: strOrNull(r.headers_sealed),
    body_bytes: num(r.body_bytes),
    content_type: strOrNull(r.content_type),
    status: str(r.status) as ApprovalRecord["status"],
    decided_by: strOrNull(r.decided_by),
    decided_at: numOrNull(r.decided_at),
    used_at: numOrNull(r.used_at),
    created_at: num(r.created_at),
    expires_at: num(r.expires_at),
  };
}

export function toSession(r: Row): SessionRecord {
  return {
    session_id: str(r.session_id),
    handle: str(r.handle),
    client_id: str(r.client_id),
    agent_id: str(r.agent_id),
    provider_id: str(r.provider_id),
    requested_scopes: json(r.requested_scopes),
    agent_state: str(r.agent_state),
    user_redirect_uri: strOrNull(r.user_redirect_uri),
    resource: strOrNull(r.resource),
    pkce_verifier_sealed: str(r.pkce_verifier_sealed),
    code_challenge: str(r.code_challenge),
    upstream_state: str(r.upstream_state),
    status: str(r.status) as SessionRecord["status"],
    binding_hash: strOrNull(r.binding_hash),
    code_hash: strOrNull(r.code_hash),
    user_id: strOrNull(r.user_id),
    consented_scopes: r.consented_scopes == null ? null : json(r.consented_scopes),
    grant_id: strOrNull(r.grant_id),
    created_at: num(r.created_at),
    expires_at: num(r.expires_at),
  };
}

export function toToken(r: Row): TokenRecord {
  return {
    token_hash: str(r.token_hash),
    token_id: str(r.token_id),
    client_id: str(r.client_id),
    agent_id: str(r.agent_id),
    user_id: str(r.user_id),
    provider_id: str(r.provider_id),
    scopes: json(r.scopes),
    grant_id: strOrNull(r.grant_id),
    created_at: num(r.created_at),
    expires_at: num(r.expires_at),
    revoked_at: numOrNull(r.revoked_at),
    // absent unless set: records minted without refresh or DPoP compare equal to what was created
    ...(r.family_id == null ? {} : { family_id: str(r.family_id) }),
    ...(r.jkt == null ? {} : { jkt: str(r.jkt) }),
    ...(r.delegation == null ? {} : { delegation: json<Delegation>(r.delegation) }),
    ...(r.resource == null ? {} : { resource: str(r.resource) }),
  };
}

export function toGrant(r: Row): GrantRecord {
  return {
    grant_id: str(r.grant_id),
    provider_id: str(r.provider_id),
    user_id: str(r.user_id),
    agent_id: str(r.agent_id),
    access_token_sealed: str(r.access_token_sealed),
    refresh_token_sealed: strOrNull(r.refresh_token_sealed),
    expires_at: numOrNull(r.expires_at),
    scope: json(r.scope),
    status: str(r.status) as GrantRecord["status"],
    version: num(r.version),
    refresh_owner: strOrNull(r.refresh_owner),
    refresh_lease_until: numOrNull(r.refresh_lease_until),
    created_at: num(r.created_at),
    updated_at: num(r.updated_at),
  };
}

export function toAudit(r: Row): AuditEvent {
  const e: AuditEvent = {
    id: num(r.id),
    type: str(r.type),
    at: num(r.at),
    client_id: strOrNull(r.client_id),
    agent_id: strOrNull(r.agent_id),
    provider_id: strOrNull(r.provider_id),
    user_id: strOrNull(r.user_id),
  };
  if (r.data != null) e.data = json(r.data);
  if (r.seq != null) {
    e.seq = num(r.seq);
    e.prev_hash = str(r.prev_hash);
    e.hash = str(r.hash);
  }
  return e;
}

// column readers (every row mapper of store/sql/ reads its columns through these: one rule for both databases)

export function str(v: unknown): string {
  if (typeof v !== "string") throw new TypeError(`expected a string column, got ${typeof v}`);
  return v;
}

export function strOrNull(v: unknown): string | null {
  return v == null ? null : str(v);
}

export function num(v: unknown): number {
  const n = typeof v === "number" ? v : typeof v === "string" || typeof v === "bigint" ? Number(v) : NaN;
  if (!Number.isSafeInteger(n)) throw new TypeError(`expected an integer column, got ${String(v)}`);
  return n;
}

export function numOrNull(v: unknown): number | null {
  return v == null ? null : num(v);
}

export function json<T>(v: unknown): T {
  return JSON.parse(str(v)) as T;
}
