/** Building responses: JSON (never cached), redirects, and the one exposure rule for errors. */
import { AthError, HEADERS } from "../../protocol/index.ts";
import { StoreUnavailableError } from "../../store/errors.ts";

/** What a client is told to wait before retrying after a store failure. */
const RETRY_AFTER_S = 1;

const NO_STORE = { "cache-control": "no-store", pragma: "no-cache" };

export function json(body: unknown, status = 200, headers?: Record<string, string>): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json", ...NO_STORE, ...headers },
  });
}

/**
 * The exposure rule (node-oidc-provider's err_out): an AthError goes out as is; anything else as INTERNAL_ERROR,
 * logged, never with a stack or a cause. Every error the gateway itself answers carries `X-ATH-Error: <code>`, which
 * the proxy never lets an upstream set, so a client can tell a gateway refusal from an upstream body that merely
 * looks like one.
 */
export function errorResponse(err: unknown, log: (msg: string, err: unknown) => void): Response {
  const e = exposed(err, log);
  return json(e.toJSON(), e.status, { ...e.headers, [HEADERS.error]: e.code });
}

/**
 * The error as it may be shown: itself if an AthError; a failing store as 503 SERVICE_UNAVAILABLE with `Retry-After`
 * (DESIGN §14: a write that did not happen is never answered as a success, and a read that could not be made is not a
 * bug); anything else INTERNAL_ERROR. The original of the last two is logged, never shown.
 */
export function exposed(err: unknown, log: (msg: string, err: unknown) => void): AthError {
  if (err instanceof AthError) return err;
  if (err instanceof StoreUnavailableError) {
    log("store unavailable", err.cause);
    return new AthError("SERVICE_UNAVAILABLE", undefined, undefined, { headers: { "retry-after": String(RETRY_AFTER_S) } });
  }
  log("internal error", err);
  return new AthError("INTERNAL_ERROR");
}

export function redirect(location: string, status: 302 | 303 = 303, headers?: HeadersInit): Response {
  const h = new Headers(headers);
  h.set("location", location);
  h.set("cache-control", "no-store");
  h.set("referrer-policy", "no-referrer");
  return new Response(null, { status, headers: h });
}
