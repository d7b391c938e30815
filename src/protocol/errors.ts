/**
 * The one error table of the ATH wire protocol: code → HTTP status → default message.
 * Codes of the official schema (ATHErrorCode) first, then the extensions of DESIGN.md §3.
 */

export const ERRORS = {
  INVALID_ATTESTATION: { status: 401, message: "The agent attestation is invalid" },
  AGENT_NOT_REGISTERED: { status: 403, message: "The client is not registered" },
  AGENT_UNAPPROVED: { status: 403, message: "The agent is not approved" },
  PROVIDER_NOT_APPROVED: { status: 403, message: "The agent is not approved for this provider" },
  SCOPE_NOT_APPROVED: { status: 403, message: "A requested scope is not approved" },
  SESSION_NOT_FOUND: { status: 400, message: "The authorization session was not found or was already used" },
  SESSION_EXPIRED: { status: 400, message: "The authorization session has expired" },
  STATE_MISMATCH: { status: 400, message: "The state or browser binding does not match" },
  TOKEN_INVALID: { status: 401, message: "The access token is invalid" },
  TOKEN_EXPIRED: { status: 401, message: "The access token has expired" },
  TOKEN_REVOKED: { status: 401, message: "The access token has been revoked" },
  AGENT_IDENTITY_MISMATCH: { status: 403, message: "The agent identity does not match the registration" },
  PROVIDER_MISMATCH: { status: 403, message: "The token is not valid for this provider" },
  USER_DENIED: { status: 403, message: "The user denied the authorization" },
  OAUTH_ERROR: { status: 502, message: "The provider's OAuth server returned an error" },
  INTERNAL_ERROR: { status: 500, message: "Internal error" },
  // extensions (DESIGN.md §3)
  INVALID_REQUEST: { status: 400, message: "The request is malformed" },
  INVALID_GRANT: { status: 400, message: "The authorization code is invalid" },
  INVALID_CLIENT: { status: 401, message: "Client authentication failed" },
  UNAUTHORIZED: { status: 401, message: "A valid admin token is required" },
  NOT_FOUND: { status: 404, message: "Not found" },
  METHOD_NOT_ALLOWED: { status: 405, message: "Method not allowed" },
  AGENT_ALREADY_REGISTERED: { status: 409, message: "This agent_id is already registered" },
  PROVIDER_ALREADY_EXISTS: { status: 409, message: "A provider with this id already exists; use PUT to replace it" },
  APPROVAL_REQUIRED: { status: 403, message: "A person must approve this request before it is forwarded" },
  APPROVAL_DENIED: { status: 403, message: "A person denied this request" },
  /** DESIGN §23: an ID-JAG is good but the person has not connected the provider yet: `details.consent_url`. */
  CONSENT_REQUIRED: { status: 403, message: "The person must connect this provider once before the enterprise's grant can be used" },
  POLICY_DENIED: { status: 403, message: "A policy rule of this gateway refuses this request" },
  BUDGET_EXHAUSTED: { status: 429, message: "The budget for this kind of request is used up until its window ends" },
  PAYLOAD_TOO_LARGE: { status: 413, message: "The request body is too large" },
  RATE_LIMITED: { status: 429, message: "Too many requests" },
  UPSTREAM_UNAVAILABLE: { status: 502, message: "The provider API could not be reached" },
  UPSTREAM_TIMEOUT: { status: 504, message: "The provider API did not answer in time" },
  NOT_READY: { status: 503, message: "The gateway cannot serve requests: its store does not answer" },
  SERVICE_UNAVAILABLE: { status: 503, message: "The gateway cannot record this right now; nothing was changed — retry shortly" },
} as const satisfies Record<string, { status: number; message: string }>;

export type ErrorCode = keyof typeof ERRORS;
export const ERROR_CODES = Object.keys(ERRORS) as ErrorCode[];

export type ErrorDetails = Record<string, unknown>;

/** The wire shape of every ATH error body: `{code, message, details?}`. */
export interface ErrorBody {
  code: ErrorCode;
  message: string;
  details?: ErrorDetails;
}

/**
 * The one error type of ath. `toJSON()` is the wire body and never carries `cause` or a stack.
 * @example throw new AthError("SCOPE_NOT_APPROVED", undefined, { unapproved_scopes: ["mail:send"] })
 */
export class AthError extends Error {
  override readonly name = "AthError";
  readonly code: ErrorCode;
  readonly status: number;
  readonly details?: ErrorDetails;
  /** Extra response headers (e.g. Retry-After on RATE_LIMITED). */
  readonly headers?: Record<string, string>;

  constructor(
    code: ErrorCode,
    message?: string,
    details?: ErrorDetails,
    options?: { cause?: unknown; headers?: Record<string, string> },
  ) {
    super(message ?? ERRORS[code].message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.status = ERRORS[code].status;
    if (details !== undefined) this.details = details;
    if (options?.headers !== undefined) this.headers = options.headers;
  }

  toJSON(): ErrorBody {
    return this.details === undefined
      ? { code: this.code, message: this.message }
      : { code: this.code, message: this.message, details: this.details };
  }
}

/**
 * Request fields that are themselves the subject of a schema error code: any problem with one of them (missing, too
 * short, too long, wrong type) is that code, not INVALID_REQUEST — the official SDK's compliance suite expects this
 * (DESIGN §8).
 */
export const FIELD_ERROR_CODES: Readonly<Record<string, ErrorCode>> = {
  state: "STATE_MISMATCH",
  agent_attestation: "INVALID_ATTESTATION",
};
