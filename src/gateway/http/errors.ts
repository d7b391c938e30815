/**
 * The error shapes a handler may throw besides AthError, one per wire the gateway speaks — the pipeline's one boundary
 * (pipeline.ts) turns each into its answer by the route's kind; handlers never build error responses themselves:
 * - `OAuthError` — `{error, error_description}` with RFC 6749 §5.2 / RFC 7591 §3.2.2 codes (routes of kind `oauth`);
 * - `BearerChallenge` — a resource server's refusal (RFC 6750 §3): 401/403 with a `WWW-Authenticate` challenge;
 * - `JsonRpcError` — a JSON-RPC 2.0 error answered with an HTTP status (the MCP front door's unreadable requests).
 */

export class OAuthError extends Error {
  constructor(
    readonly error: string,
    readonly description: string,
    readonly status = 400,
    readonly headers: Record<string, string> = {},
    /** Members beside `error` (DESIGN §23: `consent_url` with `interaction_required`). */
    readonly extra: Record<string, string> = {},
  ) {
    super(description);
  }
}

/** A resource server's refusal: its status, its WWW-Authenticate challenge and an OAuth-shaped body. */
export class BearerChallenge extends Error {
  constructor(
    readonly status: 401 | 403,
    readonly challenge: string,
    readonly body: { error: string; error_description: string },
  ) {
    super(body.error_description);
  }
}

/** A JSON-RPC error answered with an HTTP status; `id` is the request's when it could be read (else null). */
export class JsonRpcError extends Error {
  constructor(
    readonly status: number,
    readonly id: unknown,
    readonly code: number,
    message: string,
    readonly data?: Record<string, unknown>,
    /** false: no `id` member at all (an answer to no request, e.g. a refused Origin). */
    readonly withId = true,
  ) {
    super(message);
  }
}

/** JSON-RPC 2.0 §5.1 error codes the gateway answers with itself. */
export const JSON_RPC = {
  parseError: -32700,
  invalidRequest: -32600,
} as const;

/** A JSON-RPC error object, as a response message. */
export function jsonRpcErrorBody(id: unknown, code: number, message: string, data?: Record<string, unknown>, withId = true) {
  return { jsonrpc: "2.0" as const, ...(withId ? { id: id ?? null } : {}), error: { code, message, ...(data ? { data } : {}) } };
}

/** Responses for the shapes above (the boundary's). */
export function oauthErrorResponse(err: OAuthError): Response {
  return new Response(JSON.stringify({ error: err.error, error_description: err.description, ...err.extra }), {
    status: err.status,
    headers: { "content-type": "application/json", "cache-control": "no-store", ...err.headers },
  });
}

export function challengeResponse(err: BearerChallenge): Response {
  return new Response(JSON.stringify(err.body), {
    status: err.status,
    headers: { "content-type": "application/json", "www-authenticate": err.challenge, "cache-control": "no-store" },
  });
}

export function jsonRpcErrorResponse(err: JsonRpcError): Response {
  return new Response(JSON.stringify(jsonRpcErrorBody(err.id, err.code, err.message, err.data, err.withId)), {
    status: err.status,
    headers: { "content-type": "application/json", "cache-control": "no-store" },
  });
}
