/**
 * What the MCP front door (DESIGN §18) keeps apart: the MCP clients that registered dynamically (RFC 7591), the
 * authorization requests they opened (each one a Phase B session, plus what the client sent) and what a client declared
 * for an upstream session. Their refresh tokens are the agents' (types.ts `RefreshTokenRecord`: one table, one
 * rotation). This module imports nothing of the store: types.ts includes it, never the other way round.
 */

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
  /**
   * When the client first exchanged a code (completed an authorization); null until then. A client that never does
   * within the sweep's retention is swept (docs/mcp-front-door.md).
   */
  authorized_at: number | null;
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

export interface McpStore {
  createMcpClient(c: McpClientRecord): Promise<void>;
  getMcpClient(clientId: string): Promise<McpClientRecord | null>;
  /** Records the client's first completed authorization (a code exchanged); later ones change nothing. */
  markMcpClientAuthorized(clientId: string, now: number): Promise<void>;
  createMcpAuthorization(a: McpAuthorizationRecord): Promise<void>;
  getMcpAuthorization(sessionId: string): Promise<McpAuthorizationRecord | null>;
  /** Sets the code of a request that has none yet; false when it already had one (or is gone). */
  setMcpAuthorizationCode(sessionId: string, codeHash: string, expiresAt: number): Promise<boolean>;
  /** Spends a code, atomically: the request it belonged to (its code cleared), or null when unknown, spent or expired. */
  consumeMcpCode(codeHash: string, now: number): Promise<McpAuthorizationRecord | null>;
  /**
   * A session an MCP client opened (`session_key`: a hash of provider and session id), bound to the client and the
   * person: kept a week, replaced if the same session is opened again.
   */
  recordMcpSession(s: McpSessionRecord): Promise<void>;
  getMcpSession(sessionKey: string): Promise<McpSessionRecord | null>;
  /** Replaces what ath keeps of a session it holds itself (`held`); false when the session is gone. */
  updateMcpSessionHeld(sessionKey: string, held: string): Promise<boolean>;
  deleteMcpSession(sessionKey: string): Promise<void>;
  /** The upstream session ath holds for (provider, person, client) (`session_key`: their hash), or null. */
  getMcpUpstreamSession(sessionKey: string, now: number): Promise<McpUpstreamSessionRecord | null>;
  /** Records (or replaces) the upstream session ath holds; rows unused for a week are dropped. */
  putMcpUpstreamSession(s: McpUpstreamSessionRecord): Promise<void>;
  /** Forgets the upstream session only if it is still `sessionSealed` (a newer one another instance made stays). */
  dropMcpUpstreamSession(sessionKey: string, sessionSealed: string): Promise<void>;
  /** A request ath pushed to a client on a session it holds, awaiting the client's answer (`input_key`: a hash). */
  openMcpSessionInput(inputKey: string, now: number): Promise<void>;
  /** Sets the answer of an awaited input, once; false when none is awaited under that key (or it was answered). */
  answerMcpSessionInput(inputKey: string, answerSealed: string): Promise<boolean>;
  /** The answer, when it came (the row is then removed); null while none did. */
  takeMcpSessionInput(inputKey: string): Promise<string | null>;
}

export interface McpSessionRecord {
  session_key: string;
  client_id: string;
  /** The person; null for rows written before sessions were bound to people (they answer as unknown). */
  user_id: string | null;
  url_elicitation: boolean;
  /** A session ath holds itself (2025 client, 2026-only upstream): what the client declared, as JSON; null otherwise. */
  held: string | null;
  created_at: number;
}

export interface McpUpstreamSessionRecord {
  session_key: string;
  /** The upstream's Mcp-Session-Id, sealed. */
  session_sealed: string;
  /** The upstream's initialize result (JSON): what server/discover is answered with. */
  opened: string;
  created_at: number;
  used_at: number;
}
