/**
 * The MCP front door's wire constants (DESIGN §18): where ath serves remote MCP servers, the OAuth endpoints it
 * offers MCP clients as their authorization server, and the prefixes of what it mints for them (their access and
 * refresh tokens are the agents': `ath_tk_`, `ath_rt_`).
 */

export const MCP_PATHS = {
  /** + /{provider_id}: the Streamable HTTP endpoint of one fronted MCP server. */
  mcp: "/mcp",
  /** RFC 9728 protected-resource metadata; + /mcp/{provider_id}. */
  protectedResource: "/.well-known/oauth-protected-resource",
  /** RFC 8414 authorization-server metadata (and the OIDC discovery name, which some clients try first). */
  authorizationServer: "/.well-known/oauth-authorization-server",
  openidConfiguration: "/.well-known/openid-configuration",
  authorize: "/oauth/authorize",
  token: "/oauth/token",
  register: "/oauth/register",
  /** Where Phase B hands the person back (ath's own hop before the MCP client's redirect URI). */
  return: "/oauth/return",
} as const;

export const MCP_PREFIX = {
  /** Client ids ath gives MCP clients (dynamic registration), and the agent records behind metadata-document clients. */
  client: "mcp_",
  clientSecret: "mcp_secret_",
  code: "mcp_code_",
} as const;

/** The MCP protocol revision whose authorization profile ath implements. */
export const MCP_AUTH_REVISION = "2025-11-25";

/** JSON-RPC error code ath uses for its own refusals of an MCP call (server-defined range, -32000 to -32099). */
export const MCP_REFUSED = -32001;

/**
 * The MCP wires the front door serves (DESIGN §21): 2025-11-25 — stateful (`initialize`, `Mcp-Session-Id`) — and
 * 2026-07-28 — stateless, every request carrying its protocol version and client capabilities in `_meta`.
 */
export const MCP_WIRE = { stateful: "2025-11-25", stateless: "2026-07-28" } as const;

/** The reserved `_meta` keys of a 2026-07-28 request and result (MCP's per-request envelope). */
export const MCP_META = {
  protocolVersion: "io.modelcontextprotocol/protocolVersion",
  clientCapabilities: "io.modelcontextprotocol/clientCapabilities",
  clientInfo: "io.modelcontextprotocol/clientInfo",
  logLevel: "io.modelcontextprotocol/logLevel",
  serverInfo: "io.modelcontextprotocol/serverInfo",
  subscriptionId: "io.modelcontextprotocol/subscriptionId",
} as const;

/** JSON-RPC error codes of MCP 2026-07-28 that ath answers with itself (DESIGN §21). */
export const MCP_ERROR = {
  /** A standard header (Mcp-Method, Mcp-Name, MCP-Protocol-Version) or an Mcp-Param-* header disagrees with the body. */
  headerMismatch: -32020,
  /** A request needs a client capability the client did not declare. */
  missingCapability: -32021,
  /** The request names a protocol version this server does not speak. */
  unsupportedVersion: -32022,
  /** A requestState ath cannot honour (tampered, foreign, expired, used) or params changed since it was minted. */
  invalidParams: -32602,
  methodNotFound: -32601,
} as const;

/** The prefix of a `requestState` ath minted (AEAD-sealed, DESIGN §21); any other state is the upstream's own. */
export const REQUEST_STATE_PREFIX = "ath1.";

/** The `inputRequests` key of ath's own approval round (a URL elicitation to the approval page, DESIGN §21). */
export const APPROVAL_INPUT = "ath_approval";
