/** GET /.well-known/ath.json, GET /health and the landing page GET /. Never a secret. */
import { ATH_VERSION, GRANT_TYPES, PATHS, type DiscoveryDocument } from "../../protocol/index.ts";
import type { Call } from "../context.ts";
import { listProviders } from "../domain/providers.ts";
import { json } from "../http/response.ts";
import { htmlResponse, renderLandingPage } from "../pages/index.ts";

export async function discovery({ gw }: Call): Promise<Response> {
  const base = gw.opts.baseUrl;
  const providers = await listProviders(gw);
  const doc: DiscoveryDocument = {
    ath_version: ATH_VERSION,
    gateway_id: new URL(base).host,
    agent_registration_endpoint: base + PATHS.register,
    supported_providers: providers.map((p) => ({
      provider_id: p.provider_id,
      display_name: p.config.display_name,
      available_scopes: p.config.available_scopes,
      auth_mode: "OAUTH2",
      agent_approval_required: true,
      ...(p.config.categories ? { categories: p.config.categories } : {}),
    })),
    endpoints: {
      register: base + PATHS.register,
      authorize: base + PATHS.authorize,
      token: base + PATHS.token,
      revoke: base + PATHS.revoke,
      proxy: base + PATHS.proxy,
    },
    // DESIGN §17 (refresh) and §23: an enterprise IdP's ID-JAG, and delegation to a sub-agent (RFC 8693)
    grant_types_supported: ["authorization_code", "refresh_token", GRANT_TYPES.jwtBearer, ...(gw.opts.maxDelegationDepth === 0 ? [] : [GRANT_TYPES.tokenExchange])],
    dpop_signing_alg_values_supported: ["ES256"],
  };
  return json(doc, 200, { "cache-control": "public, max-age=60" });
}

/** GET / — a small HTML page saying what this is, with links to discovery, health and the console. */
export async function landing({ gw }: Call): Promise<Response> {
  const providers = (await listProviders(gw)).map((p) => ({ id: p.provider_id, displayName: p.config.display_name }));
  const html = renderLandingPage({ host: new URL(gw.opts.baseUrl).host, baseUrl: gw.opts.baseUrl, version: gw.opts.version, appId: gw.opts.appId, providers });
  return htmlResponse(html);
}

export function health({ gw }: Call): Response {
  return json({ status: "ok", version: gw.opts.version });
}
