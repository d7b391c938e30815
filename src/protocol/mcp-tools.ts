/**
 * The inputs and outputs of `ath mcp`'s tools (DESIGN §12): one zod schema each, from which the SDK writes the
 * JSON Schemas a host sees in `tools/list` and checks `structuredContent` against. `StatusDocument` is also the
 * type of `ath status --format json` (flows/status.ts imports the type only, so the CLI never loads classic zod).
 */
import { z } from "zod";
import { HEADER_NAME, HEADER_VALUE, PROXY_METHODS } from "./constants.ts";
import { APPROVAL_ID } from "./lean.ts";

const providerId = z.string().min(1).max(256).describe("Provider id, as ath_providers lists it");
const scopes = z.array(z.string().min(1).max(512)).max(100);
const isoTime = z.string().describe("ISO 8601 date-time");

/** The most of an API answer's body a tool result carries; the rest is not downloaded (`truncated: true`). */
export const MAX_TOOL_BODY_BYTES = 1024 * 1024;

/** The longest an MCP tool waits for a person's approval; the gateway keeps a session at most 600 s. */
export const MAX_WAIT_SECONDS = 600;

/** The `wait_seconds` input of the tools that may wait for a person: 0 up to MAX_WAIT_SECONDS. */
const waitSeconds = (description: string) => z.number().int().min(0).max(MAX_WAIT_SECONDS).optional().describe(description);

// ath_providers -------------------------------------------------------------------------------------

export const ProvidersInput = z.object({});

export const ProvidersOutput = z.object({
  gateway: z.string(),
  agent_id: z.string().nullable().describe("null until a key exists (the first ath_authorize creates one)"),
  registered: z.boolean(),
  agent_status: z.enum(["approved", "pending", "denied", "suspended"]).optional().describe("As saved at registration (or by `ath status --refresh`)"),
  providers: z.array(
    z.object({
      provider_id: z.string(),
      display_name: z.string(),
      available_scopes: z.array(z.string()),
      approved_scopes: z.array(z.string()).describe("Scopes the gateway approved for this agent (empty when not registered for it)"),
      token_held: z.boolean().describe("A live (unexpired) token is saved: ath_request can call this provider"),
      token_scopes: z.array(z.string()).optional(),
      token_expires_at: isoTime.optional(),
    }),
  ),
});
export type ProvidersOutput = z.infer<typeof ProvidersOutput>;

// ath_authorize / ath_token ---------------------------------------------------------------------------

export const AuthorizeToolInput = z.object({
  provider: providerId,
  scopes: scopes.optional().describe("Scopes to ask for; default: those approved at registration (all the provider offers on first use)"),
  code_on_page: z
    .boolean()
    .optional()
    .describe("The gateway shows the person a code instead of redirecting to this machine (their browser is elsewhere); pass it to ath_token {code}"),
  wait_seconds: waitSeconds("With URL elicitation: how long to wait for the approval before answering `pending` (default 45)"),
});
export type AuthorizeToolInput = z.infer<typeof AuthorizeToolInput>;

export const TokenToolInput = z.object({
  provider: providerId.optional().describe("The provider whose pending authorization to complete; default: the only one"),
  code: z.string().min(1).max(512).optional().describe("The code the gateway showed the person (ath_authorize with code_on_page)"),
  session: z.string().min(1).max(256).optional().describe("The ath_session_id the code belongs to; default: the only pending one"),
  wait_seconds: waitSeconds("Without a code: how long to wait for the approval before answering `pending` (default 45)"),
});
export type TokenToolInput = z.infer<typeof TokenToolInput>;

/** Where an authorization stands: `authorized` (a token is saved) or `pending` (the person has yet to approve). */
export const AuthorizationOutput = z.object({
  status: z.enum(["authorized", "pending"]),
  gateway: z.string(),
  agent_id: z.string(),
  provider_id: z.string(),
  /** Set when this call registered the agent at the gateway first. */
  registered_now: z.boolean().optional(),
  authorization_url: z.string().optional().describe("pending: the page where the person approves"),
  ath_session_id: z.string().optional(),
  scopes: z.array(z.string()).optional().describe("pending: the scopes asked for"),
  effective_scopes: z.array(z.string()).optional().describe("authorized: what the token may do"),
  expires_at: isoTime.optional(),
  already_exchanged: z.boolean().optional(),
});
export type AuthorizationOutput = z.infer<typeof AuthorizationOutput>;

// ath_request ------------------------------------------------------------------------------------------

export const RequestToolInput = z.object({
  provider: providerId,
  method: z.enum(PROXY_METHODS as [string, ...string[]]).describe("HTTP method (those the gateway's proxy forwards)"),
  path: z.string().min(1).max(8192).regex(/^\//, "must start with /").describe("API path relative to the provider's API base, e.g. /v1/messages"),
  query: z.record(z.string(), z.union([z.string(), z.array(z.string())])).optional().describe("Query parameters, added to the path's own"),
  headers: z
    .record(z.string().regex(HEADER_NAME, "not a valid header name"), z.string().regex(HEADER_VALUE, "no line breaks or control characters"))
    .optional()
    .describe("Extra request headers (Authorization and X-ATH-Agent-ID are set by ath)"),
  body: z.unknown().optional().describe("Request body: a string is sent as is, any other JSON value as application/json"),
  approval_id: z
    .string()
    .regex(APPROVAL_ID, "an approval id (ath_apr_…)")
    .optional()
    .describe("Resend a request a person approved (APPROVAL_REQUIRED's details.approval_id): the same method, path, query and body"),
  wait_seconds: waitSeconds("With URL elicitation: how long to wait for the person's decision on a request that needs one (default 45)"),
});
export type RequestToolInput = z.infer<typeof RequestToolInput>;

export const RequestOutput = z.object({
  status: z.number().int(),
  headers: z.record(z.string(), z.string()),
  body: z.unknown().describe("JSON answers parsed, other text as a string, binary as base64 (body_encoding)"),
  body_encoding: z.literal("base64").optional(),
  truncated: z.boolean().optional().describe(`true: the body was longer than ${MAX_TOOL_BODY_BYTES} bytes and is cut there`),
});
export type RequestOutput = z.infer<typeof RequestOutput>;

// ath_status / ath_revoke -------------------------------------------------------------------------------

export const StatusInput = z.object({});

/** What the agent's home holds (`ath status --format json`); secrets masked. */
export const StatusDocument = z.object({
  home: z.string(),
  default_gateway: z.string().nullable(),
  gateways: z.record(z.string(), z.string()),
  identity: z.object({ agent_id: z.string().nullable(), key_path: z.string(), key_exists: z.boolean(), key_error: z.string().optional() }),
  registrations: z.array(
    z.object({
      gateway: z.string(),
      agent_id: z.string(),
      client_id: z.string(),
      client_secret: z.string(),
      agent_status: z.string(),
      approval_expires: z.string(),
      approved_providers: z.array(
        z.object({ provider_id: z.string(), approved_scopes: z.array(z.string()), denied_scopes: z.array(z.string()), denial_reason: z.string().optional() }),
      ),
      tokens: z.array(
        z.object({
          provider_id: z.string(),
          access_token: z.string(),
          effective_scopes: z.array(z.string()),
          expires_at: z.string(),
          seconds_left: z.number(),
          expired: z.boolean(),
          /** When its refresh family ends (DESIGN §17); null without a refresh token. */
          refresh_expires_at: z.string().nullable(),
        }),
      ),
      pending: z.array(z.object({ ath_session_id: z.string(), provider_id: z.string(), scopes: z.array(z.string()), created_at: z.string() })),
    }),
  ),
});
export type StatusDocument = z.infer<typeof StatusDocument>;

export const RevokeToolInput = z.object({
  provider: providerId.optional(),
  all: z.boolean().optional().describe("Revoke every saved token at this gateway"),
});
export type RevokeToolInput = z.infer<typeof RevokeToolInput>;

export const RevokeOutput = z.object({ gateway: z.string(), revoked: z.array(z.string()) });
export type RevokeOutput = z.infer<typeof RevokeOutput>;
