/**
 * What the MCP front door (DESIGN §18) keeps: the MCP clients that registered dynamically (RFC 7591), the
 * authorization requests they opened (each one a Phase B session, plus what the client sent), and the refresh tokens
 * ath gives them (rotated; a family dies whole on reuse).
 */
import type { ApprovalRecord } from "./types.ts";

/** The RFC 7591 metadata ath keeps of a client (what it registered, or what its metadata document says). */
export interface McpClientMetadata {
  client_name?: string;
  client_uri?: string;
  logo_uri?: string;
  redirect_uris: string[];
  grant_types: string[];
  response_types: string[];
  token_endpoint_auth_method: "none" | "client_secret_post" | "client_secret_basic";
  scope?: string;
  software_id?: string;
  software_version?: string;
}

export interface McpClientRecord {
  /** `mcp_…`, minted at registration. */
  client_id: string;
  /** SHA-256 of the client secret; null for public clients (`token_endpoint_auth_method: none`). */
  client_secret_hash: string | null;
  metadata: McpClientMetadata;
  created_at: number;
}

/** One /oauth/authorize request, from the consent page until its code is exchanged (or expires). */
export interface McpAuthorizationRecord {
  /** The Phase B session behind it. */
  session_id: string;
  /** The OAuth client_id the MCP client sent (`mcp_…` or its metadata document's https URL). */
  client_id: string;
  /** The agent record the client acts as (its client_id: `mcp_…`). */
  agent_client_id: string;
  redirect_uri: string;
  state: string | null;
  code_challenge: string;
  resource: string;
  /** SHA-256 of the code given to the client once the person consented; null before, and after its exchange. */
  code_hash: string | null;
  created_at: number;
  expires_at: number;
}

export type McpRefreshStatus = "live" | "spent" | "revoked";

/** A refresh token of an MCP client: one of a family descended from one consent. */
export interface McpRefreshRecord {
  refresh_hash: string;
  family_id: string;
  client_id: string;
  agent_client_id: string;
  agent_id: string;
  user_id: string;
  provider_id: string;
  resource: string;
  scopes: string[];
  grant_id: string | null;
  /** SHA-256 of the access token issued with it (revoked with the family). */
  access_token_hash: string;
  status: McpRefreshStatus;
  spent_at: number | null;
  created_at: number;
  /** When this refresh token expires: --refresh-idle after it was issued, never past the family's end. */
  expires_at: number;
  /** When the whole family ends: --refresh-ttl after the consent (DESIGN §17); rows from before it carry expires_at. */
  family_expires_at: number;
}

export interface McpStore {
  createMcpClient(c: McpClientRecord): Promise<void>;
  getMcpClient(clientId: string): Promise<McpClientRecord | null>;
  createMcpAuthorization(a: McpAuthorizationRecord): Promise<void>;
  getMcpAuthorization(sessionId: string): Promise<McpAuthorizationRecord | null>;
  /** Sets the code of a request that has none yet; false when it already had one (or is gone). */
  setMcpAuthorizationCode(sessionId: string, codeHash: string, expiresAt: number): Promise<boolean>;
  /** Spends a code, atomically: the request it belonged to (its code cleared), or null when unknown, spent or expired. */
  consumeMcpCode(codeHash: string, now: number): Promise<McpAuthorizationRecord | null>;
  createMcpRefresh(r: McpRefreshRecord): Promise<void>;
  getMcpRefresh(refreshHash: string): Promise<McpRefreshRecord | null>;
  /** live → spent, atomically, before expiry: the token as it was, or null when it was not live. */
  spendMcpRefresh(refreshHash: string, now: number): Promise<McpRefreshRecord | null>;
  /** Every token of the family revoked; returns them (the access tokens to revoke with them are named there). */
  revokeMcpFamily(familyId: string): Promise<McpRefreshRecord[]>;
  /**
   * The approval an MCP resend spends (DESIGN §18: same client, user, provider and digest, any session or JSON-RPC
   * id): an unexpired approved one first, else the newest unexpired pending or denied one; null when none.
   */
  /**
   * What an MCP client declared when it opened an upstream session (`session_key`: a hash of provider and session id):
   * kept a week, replaced if the same session is opened again.
   */
  recordMcpSession(s: { session_key: string; client_id: string; url_elicitation: boolean; created_at: number }): Promise<void>;
  getMcpSession(sessionKey: string): Promise<{ client_id: string; url_elicitation: boolean } | null>;
  findMcpApproval(m: { client_id: string; user_id: string; provider_id: string; digest: string }, now: number): Promise<ApprovalRecord | null>;
}
