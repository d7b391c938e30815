/**
 * Native mode (DESIGN §7): the gateway fronts one app, so the app speaks ATH without changing. Its discovery document
 * (`/.well-known/ath-app.json`), and the one default the protocol bodies get: an omitted `provider_id` is the app's.
 */
import { ATH_VERSION, PATHS, type ServiceDiscoveryDocument } from "../../protocol/index.ts";
import type { Call, Gateway } from "../context.ts";
import { requireProvider } from "../domain/providers.ts";
import { json } from "../http/response.ts";

/** GET /.well-known/ath-app.json — the app, its scopes, and where its API is: `{base_url}/api`. */
export async function appDiscovery({ gw }: Call): Promise<Response> {
  const appId = gw.opts.appId!;
  const app = await requireProvider(gw, appId);
  const base = gw.opts.baseUrl;
  const doc: ServiceDiscoveryDocument = {
    ath_version: ATH_VERSION,
    app_id: appId,
    name: app.config.display_name,
    auth: {
      type: "oauth2",
      authorization_endpoint: base + PATHS.authorize,
      token_endpoint: base + PATHS.token,
      registration_endpoint: base + PATHS.register,
      scopes_supported: app.config.available_scopes,
      agent_attestation_required: true,
    },
    api_base: base + PATHS.nativeApi,
  };
  return json(doc, 200, { "cache-control": "public, max-age=60" });
}

/**
 * In native mode a body may leave `provider_id` out — at authorize, and in each `requested_providers` entry at
 * register: it is the app's. Anything else is left for the schema to judge.
 */
export function withAppDefaults(gw: Gateway, body: Record<string, unknown>): Record<string, unknown> {
  const appId = gw.opts.appId;
  if (appId === null) return body;
  const out = { ...body };
  if (!("provider_id" in out) && "scopes" in out) out.provider_id = appId;
  if (Array.isArray(out.requested_providers)) {
    out.requested_providers = out.requested_providers.map((r: unknown) =>
      r !== null && typeof r === "object" && !Array.isArray(r) && !("provider_id" in r) ? { ...r, provider_id: appId } : r,
    );
  }
  return out;
}
