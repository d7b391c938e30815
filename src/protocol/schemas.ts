/**
 * zod schemas of every ATH wire object (spec §2, ath-protocol-0.1.schema.json); types come from z.infer.
 * Both the gateway (to parse requests and write responses) and the CLI (to parse responses) use these.
 */
import { z } from "zod";
import { AgentStatus, ProviderApproval, ScopeIntersection } from "./lean.ts";

export { AgentStatus, ATHError, formatIssues, ProviderApproval, ScopeIntersection } from "./lean.ts";
import { PREFIX } from "./constants.ts";
import { ActClaim, GRANT_TYPES, IDENTITY_LIMITS, TOKEN_TYPES } from "./identity.ts";

/** An absolute URI (RFC 3986): anything `new URL` accepts with a scheme, e.g. https://… or did:key:…. */
export const uri = z
  .string()
  .min(1)
  .max(2048)
  .refine((s) => URL.canParse(s), { message: "Invalid URI" });

/** An absolute http(s) URL. */
export const httpUrl = z
  .string()
  .max(2048)
  .refine((s) => URL.canParse(s) && /^https?:$/.test(new URL(s).protocol), { message: "Invalid http(s) URL" });

/**
 * A redirect URI the gateway may send a person's browser to (RFC 8252 §7, RFC 6749 §3.1.2): https; http only on a
 * loopback address; or a private-use scheme in reverse-DNS form (`com.example.app:/cb`) for native apps. Never a
 * fragment, and never script-bearing schemes (javascript:, data:, …) — anyone can register an agent.
 */
export const redirectUri = uri.refine(
  (s) => {
    if (!URL.canParse(s)) return false; // reported by `uri`; zod runs every refinement
    const u = new URL(s);
    if (u.hash !== "" || s.includes("#")) return false;
    if (u.protocol === "https:") return true;
    if (u.protocol === "http:") return ["127.0.0.1", "[::1]", "localhost"].includes(u.hostname);
    return /^[a-z][a-z0-9+-]*(\.[a-z0-9+-]+)+:$/.test(u.protocol);
  },
  { message: "redirect URIs must be https, http on a loopback address, or a reverse-DNS private-use scheme, without a fragment" },
);

const id = z.string().min(1).max(256);
const scope = z.string().min(1).max(512);
const scopes = z.array(scope).max(100);
const isoDateTime = z.string().refine((s) => !Number.isNaN(Date.parse(s)), { message: "Invalid date-time" });

// Discovery -------------------------------------------------------------------------------------

export const ProviderInfo = z.object({
  provider_id: id,
  display_name: z.string(),
  categories: z.array(z.string()).optional(),
  available_scopes: z.array(z.string()),
  auth_mode: z.string(),
  agent_approval_required: z.boolean(),
});
export type ProviderInfo = z.infer<typeof ProviderInfo>;

export const DiscoveryDocument = z.object({
  ath_version: z.string(),
  gateway_id: z.string(),
  agent_registration_endpoint: uri,
  supported_providers: z.array(ProviderInfo),
  /** Extension: absolute URLs of every endpoint. */
  endpoints: z
    .object({ register: uri, authorize: uri, token: uri, revoke: uri, proxy: uri })
    .partial()
    .optional(),
  /** ath's extensions (DESIGN §17): refresh tokens, and DPoP proofs signed with the agent's ES256 key. */
  grant_types_supported: z.array(z.string()).optional(),
  dpop_signing_alg_values_supported: z.array(z.string()).optional(),
});
export type DiscoveryDocument = z.infer<typeof DiscoveryDocument>;

export const ServiceAuthConfig = z.object({
  type: z.literal("oauth2"),
  authorization_endpoint: uri,
  token_endpoint: uri,
  registration_endpoint: uri.optional(),
  scopes_supported: z.array(z.string()),
  agent_attestation_required: z.boolean().default(true),
});

export const ServiceDiscoveryDocument = z.object({
  ath_version: z.string(),
  app_id: z.string(),
  name: z.string(),
  auth: ServiceAuthConfig,
  api_base: uri,
});
export type ServiceDiscoveryDocument = z.infer<typeof ServiceDiscoveryDocument>;

// Identity --------------------------------------------------------------------------------------

export const DeveloperInfo = z.object({
  name: z.string().min(1).max(256),
  id: z.string().min(1).max(256),
  contact: z.string().max(256).optional(),
});
export type DeveloperInfo = z.infer<typeof DeveloperInfo>;

export const AgentIdentityDocument = z.object({
  ath_version: z.string(),
  agent_id: uri,
  name: z.string(),
  developer: DeveloperInfo,
  capabilities: z.array(z.string()).optional(),
  /** JWK object or PEM string. */
  public_key: z.union([z.record(z.string(), z.unknown()), z.string()]),
});
export type AgentIdentityDocument = z.infer<typeof AgentIdentityDocument>;

// Phase A ---------------------------------------------------------------------------------------

export const ProviderScopeRequest = z.object({ provider_id: id, scopes });
export type ProviderScopeRequest = z.infer<typeof ProviderScopeRequest>;

export const AgentRegistrationRequest = z.object({
  agent_id: uri,
  agent_attestation: z.string().min(1).max(8192),
  developer: DeveloperInfo,
  requested_providers: z.array(ProviderScopeRequest).min(1).max(50),
  purpose: z.string().max(2000).optional(),
  redirect_uris: z.array(redirectUri).max(20).optional(),
});
export type AgentRegistrationRequest = z.infer<typeof AgentRegistrationRequest>;


export const AgentRegistrationResponse = z.object({
  client_id: z.string().startsWith(PREFIX.clientId),
  client_secret: z.string().startsWith(PREFIX.clientSecret),
  agent_status: AgentStatus,
  approved_providers: z.array(ProviderApproval),
  approval_expires: isoDateTime,
});
export type AgentRegistrationResponse = z.infer<typeof AgentRegistrationResponse>;

/**
 * GET /ath/agents/status (ath's extension, docs/operating.md#endpoints): the registration as the gateway holds it now,
 * for its own client (HTTP Basic client_id:client_secret) — an admin may have approved, denied or suspended it since.
 */
export const AgentStatusResponse = z.object({
  client_id: z.string().startsWith(PREFIX.clientId),
  agent_id: z.string(),
  agent_status: z.enum(["approved", "pending", "denied", "suspended"]),
  approved_providers: z.array(ProviderApproval),
  approval_expires: isoDateTime,
  /** The approval's end has passed: the agent must register again (with a new identity). */
  approval_expired: z.boolean(),
});
export type AgentStatusResponse = z.infer<typeof AgentStatusResponse>;

/** Scopes waiting for an admin (DESIGN §17: additions under manual approval). */
export const PendingProvider = z.object({ provider_id: z.string(), scopes: z.array(z.string()) });
export type PendingProvider = z.infer<typeof PendingProvider>;

/** PATCH /ath/agents/registration (ath's extension, DESIGN §17): providers and scopes to add, as at registration. */
export const RegistrationUpdateRequest = z.object({
  agent_attestation: z.string().min(1).max(8192),
  requested_providers: z.array(ProviderScopeRequest).min(1).max(50),
});
export type RegistrationUpdateRequest = z.infer<typeof RegistrationUpdateRequest>;

/** Its answer: the registration as it is now, what was added, and what waits for an admin. */
export const RegistrationUpdateResponse = AgentStatusResponse.extend({
  pending_providers: z.array(PendingProvider),
  added: z.array(PendingProvider),
});
export type RegistrationUpdateResponse = z.infer<typeof RegistrationUpdateResponse>;

// Phase B ---------------------------------------------------------------------------------------

export const AuthorizationRequest = z.object({
  client_id: id,
  agent_attestation: z.string().min(1).max(8192),
  provider_id: id,
  scopes: scopes.min(1),
  state: z.string().min(16, "state must be 16 to 512 characters").max(512, "state must be 16 to 512 characters"),
  user_redirect_uri: redirectUri.optional(),
  resource: uri.optional(),
});
export type AuthorizationRequest = z.infer<typeof AuthorizationRequest>;

export const AuthorizationResponse = z.object({
  authorization_url: uri,
  ath_session_id: z.string().startsWith(PREFIX.session),
});
export type AuthorizationResponse = z.infer<typeof AuthorizationResponse>;

export const TokenExchangeRequest = z.object({
  grant_type: z.literal("authorization_code"),
  client_id: id,
  client_secret: z.string().min(1).max(512),
  agent_attestation: z.string().min(1).max(8192),
  code: z.string().min(1).max(512),
  ath_session_id: z.string().min(1).max(256),
});
export type TokenExchangeRequest = z.infer<typeof TokenExchangeRequest>;

/** ath's extension (DESIGN §17): a spent-on-use refresh token for a new access token; `scope` may only narrow. */
export const RefreshTokenRequest = z.object({
  grant_type: z.literal("refresh_token"),
  client_id: id,
  client_secret: z.string().min(1).max(512),
  agent_attestation: z.string().min(1).max(8192),
  refresh_token: z.string().min(1).max(512),
  /** Space-separated (RFC 6749 §6), or an array. */
  scope: z.union([z.string().max(8192), scopes]).optional(),
});
export type RefreshTokenRequest = z.infer<typeof RefreshTokenRequest>;

/**
 * DESIGN §23: an Identity Assertion JWT Authorization Grant (RFC 7523 §2.1) for `provider_id`, the client authenticated
 * as at every grant; `scope` may narrow what the assertion grants.
 */
export const JwtBearerRequest = z.object({
  grant_type: z.literal(GRANT_TYPES.jwtBearer),
  client_id: id,
  client_secret: z.string().min(1).max(512),
  agent_attestation: z.string().min(1).max(8192),
  assertion: z.string().min(1).max(16384),
  provider_id: id,
  scope: z.union([z.string().max(8192), scopes]).optional(),
});
export type JwtBearerRequest = z.infer<typeof JwtBearerRequest>;

/** A budget share (DESIGN §23 "Pinned"): a decimal count of calls, as a form string or a JSON number. */
const budgetShare = z
  .union([z.number().int(), z.string().regex(/^\d{1,10}$/, "budget must be a decimal count of calls")])
  .transform((v) => Number(v))
  .refine((n) => n >= 0 && n <= IDENTITY_LIMITS.maxBudget, { message: `budget must be from 0 to ${IDENTITY_LIMITS.maxBudget}` });

/**
 * DESIGN §23: delegation (RFC 8693 token exchange) — the agent's own access token for a registered sub-agent's, with
 * `scope` ⊆ its own and an optional budget share; `actor_token` is the sub-agent's attestation (aud
 * `{base_url}/ath/token`). `actor_client_id` (ath's extension) names the sub-agent the caller meant.
 */
export const DelegationRequest = z.object({
  grant_type: z.literal(GRANT_TYPES.tokenExchange),
  client_id: id,
  client_secret: z.string().min(1).max(512),
  agent_attestation: z.string().min(1).max(8192),
  subject_token: z.string().min(1).max(512),
  subject_token_type: z.literal(TOKEN_TYPES.accessToken, { error: `subject_token_type must be ${TOKEN_TYPES.accessToken}` }),
  actor_token: z.string().min(1).max(8192),
  actor_token_type: z.literal(TOKEN_TYPES.jwt, { error: `actor_token_type must be ${TOKEN_TYPES.jwt}` }),
  requested_token_type: z.literal(TOKEN_TYPES.accessToken, { error: `requested_token_type may only be ${TOKEN_TYPES.accessToken}` }).optional(),
  actor_client_id: id.optional(),
  scope: z.union([z.string().max(8192), scopes]).optional(),
  budget: budgetShare.optional(),
});
export type DelegationRequest = z.infer<typeof DelegationRequest>;

/** Every grant of POST /ath/token. */
export const TokenRequest = z.discriminatedUnion("grant_type", [TokenExchangeRequest, RefreshTokenRequest, JwtBearerRequest, DelegationRequest]);
export type TokenRequest = z.infer<typeof TokenRequest>;


export const TokenResponse = z.object({
  access_token: z.string().startsWith(PREFIX.token),
  /** "DPoP" when the token is bound to the agent's key (RFC 9449, DESIGN §17). */
  token_type: z.enum(["Bearer", "DPoP"]),
  expires_in: z.number().int(),
  /** ath's extension (DESIGN §17); absent at gateways without it. */
  refresh_token: z.string().startsWith(PREFIX.refreshToken).optional(),
  refresh_expires_in: z.number().int().optional(),
  effective_scopes: z.array(z.string()),
  provider_id: z.string(),
  agent_id: z.string(),
  scope_intersection: ScopeIntersection,
  /** DESIGN §23, RFC 8693 §2.2.1: a delegated token's type, its chain of actors, its budget share (null: none). */
  issued_token_type: z.string().optional(),
  act: ActClaim.optional(),
  budget: z.number().int().nullable().optional(),
});
export type TokenResponse = z.infer<typeof TokenResponse>;

export const TokenRevocationRequest = z.object({
  token: z.string().max(512),
  client_id: z.string().max(256).optional(),
  client_secret: z.string().max(512).optional(),
});
export type TokenRevocationRequest = z.infer<typeof TokenRevocationRequest>;

// Introspection (RFC 7662) -----------------------------------------------------------------------

export const IntrospectionRequest = z.object({
  token: z.string().max(512),
  token_type_hint: z.string().max(64).optional(),
});
export type IntrospectionRequest = z.infer<typeof IntrospectionRequest>;

/** RFC 7662 §2.2, with the ATH binding spelled out; an unknown, expired or revoked token is exactly `{active: false}`. */
export const IntrospectionResponse = z.union([
  z.object({
    active: z.literal(true),
    token_type: z.enum(["Bearer", "DPoP"]),
    /** RFC 9449 §6.2: the thumbprint of the key a DPoP-bound token is bound to. */
    cnf: z.object({ jkt: z.string() }).optional(),
    scope: z.string(),
    client_id: z.string(),
    sub: z.string(),
    aud: z.string(),
    iat: z.number().int(),
    exp: z.number().int(),
    agent_id: z.string(),
    user_id: z.string(),
    provider_id: z.string(),
    /** DESIGN §23: a delegated token's chain (RFC 8693 §4.1), and its budget share. */
    act: ActClaim.optional(),
    budget: z.number().int().nullable().optional(),
  }),
  z.object({ active: z.literal(false) }).strict(),
]);
export type IntrospectionResponse = z.infer<typeof IntrospectionResponse>;

// Errors ----------------------------------------------------------------------------------------

// ATHError lives in lean.ts (re-exported above): the CLI reads it on every failure.

// Attestation claims ----------------------------------------------------------------------------

/** Claims an ATH agent attestation must carry (schema: "MUST include iss, sub, aud, iat, exp, and jti"). */
export const AttestationClaims = z.object({
  iss: z.string().min(1),
  sub: z.string().min(1),
  aud: z.union([z.string(), z.array(z.string())]),
  iat: z.number(),
  exp: z.number(),
  // recorded for replay detection: no NUL (PostgreSQL text cannot hold it)
  jti: z.string().min(1).max(256).regex(/^[^\0]*$/, "must not contain U+0000"),
});
export type AttestationClaims = z.infer<typeof AttestationClaims>;

