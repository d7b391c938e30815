/**
 * Errors at /oauth/* are OAuth's (DESIGN §18 "Pinned"): `{error, error_description}` with RFC 6749 §5.2 / RFC 7591
 * §3.2.2 codes, not the ATH shape. Handlers throw OAuthError (http/errors.ts); the routes are of kind `oauth`, so the
 * pipeline's one boundary answers it — and the gateway's own limits — in that shape.
 */
export { OAuthError } from "../http/errors.ts";

/** A JSON answer that must not be cached (RFC 6749 §5.1). */
export function noStoreJson(body: unknown, status = 200): Response {
  return new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json", "cache-control": "no-store", pragma: "no-cache" } });
}
