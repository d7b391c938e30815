/**
 * Errors at /oauth/* are OAuth's (DESIGN §18 "Pinned"): `{error, error_description}` with RFC 6749 §5.2 / RFC 7591
 * §3.2.2 codes, not the ATH shape. Handlers throw OAuthError; `oauthJson` turns it (and the gateway's own limits) into
 * the answer.
 */
import { AthError } from "../../protocol/index.ts";
import type { Call, Handler } from "../context.ts";
import { isLimitError } from "../http/request.ts";

export class OAuthError extends Error {
  constructor(
    readonly error: string,
    readonly description: string,
    readonly status = 400,
    readonly headers: Record<string, string> = {},
  ) {
    super(description);
  }
}

/** An OAuth JSON endpoint: OAuthError → its JSON; a body over the row's limit → invalid_request; the rest as usual. */
export function oauthJson(handler: Handler): Handler {
  return async (call: Call) => {
    try {
      return await handler(call);
    } catch (err) {
      if (err instanceof OAuthError) return oauthErrorResponse(err);
      if (isLimitError(err) || (err instanceof AthError && err.code === "INVALID_REQUEST")) {
        return oauthErrorResponse(new OAuthError("invalid_request", (err as AthError).message, (err as AthError).status));
      }
      throw err;
    }
  };
}

export function oauthErrorResponse(err: OAuthError): Response {
  return new Response(JSON.stringify({ error: err.error, error_description: err.description }), {
    status: err.status,
    headers: { "content-type": "application/json", "cache-control": "no-store", ...err.headers },
  });
}

/** A JSON answer that must not be cached (RFC 6749 §5.1). */
export function noStoreJson(body: unknown, status = 200): Response {
  return new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json", "cache-control": "no-store", pragma: "no-cache" } });
}
