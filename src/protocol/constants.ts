/** Paths, prefixes and fixed limits of the ATH protocol as ath implements it. */

export const ATH_VERSION = "0.1";

/** Endpoint paths, relative to the gateway's base_url (spec §4). */
export const PATHS = {
  discovery: "/.well-known/ath.json",
  appDiscovery: "/.well-known/ath-app.json",
  health: "/health",
  ready: "/ready",
  metrics: "/metrics",
  register: "/ath/agents/register",
  agentStatus: "/ath/agents/status",
  /** ath's extension (DESIGN §17): PATCH grows an agent's providers and scopes through the approval policy. */
  agentRegistration: "/ath/agents/registration", // ath's extension: an agent reads its own registration (HTTP Basic)
  authorize: "/ath/authorize",
  consent: "/ath/consent", // + /{handle}
  callback: "/ath/callback",
  token: "/ath/token",
  proxy: "/ath/proxy", // + /{provider_id}/{path}
  revoke: "/ath/revoke",
  introspect: "/ath/introspect",
  adminProviders: "/ath/admin/providers",
  adminAgents: "/ath/admin/agents",
  adminTokens: "/ath/admin/tokens",
  adminTokensRevoke: "/ath/admin/tokens/revoke",
  adminAudit: "/ath/admin/audit",
  /** Per-request approvals (DESIGN §15): the page a person decides on, and the agent's status poll. + /{approval_id} */
  approvals: "/ath/approvals",
  adminApprovals: "/ath/admin/approvals",
  adminBudgets: "/ath/admin/budgets",
  /** DESIGN §22: the federated MCP URLs, their members, and which members each person connected. */
  adminMcp: "/ath/admin/mcp",
  /** DESIGN §23: trusted issuers (ID-JAGs, workload JWTs). + /{issuer} (URL-encoded) */
  adminTrustedIssuers: "/ath/admin/trusted-issuers",
  adminConsole: "/admin",
  nativeApi: "/api",
  /** DESIGN §20: the audit chain as JSONL (`?since=`), and the public key its checkpoints are signed with. */
  adminAuditExport: "/ath/admin/audit/export",
  auditKey: "/.well-known/ath-audit-key",
  /** DESIGN §20: webhook subscriptions. + /{webhook_id} */
  adminWebhooks: "/ath/admin/webhooks",
} as const;

/**
 * Methods the proxy forwards, and so the methods `ath proxy` sends: those Bun's fetch sends as given (it turns
 * unknown ones into GET, which would run a different request than the one scope_rules judged). Never TRACE — the
 * upstream would echo the request, upstream token included, back to the agent — nor CONNECT.
 */
export const PROXY_METHODS: readonly string[] = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "PROPFIND", "MKCOL", "REPORT", "SEARCH", "QUERY"];

/** Prefixes of identifiers and secrets ath mints; they make leaked secrets recognisable. */
export const PREFIX = {
  clientId: "ath_",
  clientSecret: "ath_secret_",
  session: "ath_sess_",
  token: "ath_tk_",
  /** A refresh token (DESIGN §17): spent by its one use, stored hashed. */
  refreshToken: "ath_rt_",
  /** A token's public id (DESIGN §9): not a secret, never a bearer. */
  tokenId: "ath_tkid_",
  code: "ath_code_",
  /** A per-request approval (DESIGN §15): not a secret — the page it names is only answered to the approver. */
  approval: "ath_apr_",
} as const;

export const HEADERS = {
  adminToken: "x-ath-user-token",
  agentId: "x-ath-agent-id",
  /** Set by the gateway on its own error responses (never passed through from an upstream). */
  error: "x-ath-error",
  /**
   * Set by `ath serve` on every answer its proxy relays from the provider: the client can tell an upstream answer from
   * a refusal even at a gateway that, unlike ath, does not mark its refusals with X-ATH-Error (DESIGN §8).
   */
  upstream: "x-ath-upstream",
  /** The agent's resend of a request a person approved (DESIGN §15): the approval's id. */
  approval: "x-ath-approval",
} as const;

/** RFC 9110 §5.1: a header name is a token. */
export const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** RFC 9110 §5.5: a field value has no CR, LF, NUL or other controls (and is Latin-1, as fetch sends it). */
export const HEADER_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;

export const LIMITS = {
  /** Attestation clock skew: iat must be within ±5 min of now. */
  attestationSkewSeconds: 300,
  /** An attestation lives at most one hour (exp ≤ iat + 1 h). */
  attestationMaxLifetimeSeconds: 3600,
  /** …with this leeway: jose-based signers produce exp = iat + 3601 at a second boundary (DESIGN §8). */
  attestationLifetimeLeewaySeconds: 60,
  /** Sessions live at most 10 minutes. */
  sessionTtlMaxSeconds: 600,
  tokenTtlDefaultSeconds: 3600,
  /** A refresh family lives this long from the consent (`--refresh-ttl`, DESIGN §17)… */
  refreshTtlDefaultSeconds: 30 * 24 * 3600,
  /** …and dies after this long without a use (`--refresh-idle`). */
  refreshIdleDefaultSeconds: 7 * 24 * 3600,
  /** Both at most this long. */
  refreshMaxSeconds: 366 * 24 * 3600,
  /** A spent refresh token presented again by its client this soon after its rotation is a race, not a theft. */
  refreshRaceWindowMs: 2000,
  /** DPoP proofs (RFC 9449): `iat` within this many seconds of now. */
  dpopSkewSeconds: 60,
  approvalTtlDefaultSeconds: 365 * 24 * 3600,
  stateMinLength: 16,
  stateMaxLength: 512,
  /** JSON/form bodies of the protocol endpoints. The proxy streams and is not bound by this. */
  maxBodyBytes: 64 * 1024,
  /** An upstream token within this margin of expiry counts as expired (DESIGN §8). */
  refreshMarginSeconds: 30,
  /** A `scope_rules` entry ("METHOD /path/glob") is at most this long… */
  scopeRuleMaxChars: 512,
  /** …and holds at most this many `**` segments (DESIGN §14: bounded patterns, linear-time matching). */
  scopeRuleMaxGlobstars: 8,
} as const;
