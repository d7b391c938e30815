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
