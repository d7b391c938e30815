/**
 * What enterprise and workload identity and delegation (DESIGN §23) keep: trusted issuers, the agents that registered
 * with a workload JWT, the person an ID-JAG's connection session is for, and a delegated token's place in its chain —
 * its ancestors (a closure table, so revoking one reaches every descendant in one statement) and its budget share,
 * counted in the budgets' own rows (one conditional statement per count or carve: exact across instances). types.ts
 * includes the interface; this module takes only types from it.
 */
import type { TrustedIssuer } from "../protocol/identity.ts";
import type { BudgetUsage, GrantRecord, TokenRecord } from "./types.ts";

export interface TrustedIssuerRecord {
  issuer: string;
  config: TrustedIssuer;
  /** "file" (upserted from the providers file at every start) or "admin" (added through the admin API). */
  source: "file" | "admin";
  updated_at: number;
}

/** One ancestor of a delegated token, nearest first in `Delegation.chain`. */
export interface DelegationLink {
  token_id: string;
  /** The ancestor's hash: the proxy reads it (through the cache) on every use of a descendant. Never shown. */
  token_hash: string;
  agent_id: string;
  client_id: string;
}

/** A delegated token's place (DESIGN §23): absent on a token minted by a grant of its own. */
export interface Delegation {
  /** Its ancestors, nearest (the token it was exchanged from) first; the depth is their number. */
  chain: DelegationLink[];
  /** The calls carved out for it (budget row `delegationBudgetKey(token_id)`), or null when it has no share. */
  budget: number | null;
}

/** An agent that registered with a workload JWT (DESIGN §23) instead of an ES256 attestation. */
export interface WorkloadAgentRecord {
  client_id: string;
  /** The trusted issuer its workload JWTs must come from. */
  issuer: string;
  /** RFC 7638 thumbprint of the key it proved at registration (a DPoP proof): its tokens bind to it. */
  jkt: string | null;
}

export interface IdentityStore {
  // trusted issuers
  upsertTrustedIssuer(t: TrustedIssuerRecord): Promise<void>;
  getTrustedIssuer(issuer: string): Promise<TrustedIssuerRecord | null>;
  listTrustedIssuers(): Promise<TrustedIssuerRecord[]>;
  deleteTrustedIssuer(issuer: string): Promise<boolean>;

  // workload agents
  createWorkloadAgent(w: WorkloadAgentRecord): Promise<void>;
  getWorkloadAgent(clientId: string): Promise<WorkloadAgentRecord | null>;

  // ID-JAG connections
  /** Remembers which person (`{issuer}#{sub}`) a connection session's grant is for, until `expires_at` (those expired at `now` go). */
  recordConnection(c: { session_id: string; person: string; expires_at: number }, now: number): Promise<void>;
  getConnection(sessionId: string): Promise<{ person: string } | null>;
  /** The newest live upstream grant of (agent, person, provider), or null. */
  findLiveGrant(agentId: string, userId: string, providerId: string): Promise<GrantRecord | null>;

  // delegation
  /**
   * Records `tokenHash`'s ancestors (their token_ids) for revokeDescendants, kept until the token's `expiresAt`
   * (rows expired at `now` are dropped first).
   */
  recordAncestors(tokenHash: string, ancestorIds: string[], expiresAt: number, now: number): Promise<void>;
  /** Revokes every live token descending from one of `tokenIds`; returns them (as revoked). */
  revokeDescendants(tokenIds: string[], now: number): Promise<TokenRecord[]>;
  /** Opens a budget row at 0 used (a delegated token's share). */
  openBudget(u: Omit<BudgetUsage, "used">): Promise<void>;
  /**
   * Adds `n` to a budget row's count only while it stays within its limit, in one statement: the new count, or null
   * when `n` more would pass the limit (nothing changed) or there is no such row.
   */
  carveBudget(bkey: string, windowStart: number, n: number): Promise<number | null>;
}
