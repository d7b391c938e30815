/**
 * POST /ath/introspect — RFC 7662 token introspection (the answer is domain/introspection.ts's), so a service's own API can check ATH tokens without a proxy
 * hop. Callers present the introspection token or the admin token (the route's guard). A live token is described;
 * anything else — unknown, expired, revoked, its agent no longer approved, or its upstream grant dead (the provider
 * refused its refresh, or it was dropped) — is exactly `{"active": false}` (RFC 7662 §2.2: nothing more may be said
 * about it). What introspection says, the proxy does (DESIGN §14): the grant is read from the same cache the proxy
 * reads, invalidated across instances like a revocation.
 */
import { IntrospectionRequest } from "../../protocol/index.ts";
import type { Call } from "../context.ts";
import { introspection } from "../domain/introspection.ts";
import { readJson } from "../http/request.ts";
import { json } from "../http/response.ts";

export async function introspect(call: Call): Promise<Response> {
  const { token } = await readJson(call, IntrospectionRequest, { form: true });
  return json(await introspection(call.gw, token));
}
