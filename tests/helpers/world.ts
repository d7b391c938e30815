/**
 * One e2e "world" per test file: the upstream authorization server, the sample API and `ath serve` wired together
 * (gateway port chosen first so the upstream knows `<gateway>/ath/callback`). Standard providers:
 * - `mail`: client_secret_post, no scope_rules, api_base_url = the sample API root;
 * - `mailrules`: client_secret_basic, scope_rules for /v1/messages, revocation endpoint;
 * - `calendar`: same upstream, api_base_url with the `/v1` path prefix (for prefix and mismatch tests).
 */
import { startGateway, type Gateway, type GatewayOptions } from "./gateway.ts";
import { freePort } from "./net.ts";
import { startUpstreamApi, type UpstreamApi } from "./upstream-api.ts";
import { startUpstreamAuth, type UpstreamAuth } from "./upstream-auth.ts";

export const MAIL_SCOPES = ["openid", "offline_access", "mail:read", "mail:send"];

export interface World {
  auth: UpstreamAuth;
  api: UpstreamApi;
  gw: Gateway;
  baseUrl: string;
  stop(): Promise<void>;
}

export interface WorldOptions {
  accessTokenTtl?: number;
  extraArgs?: string[];
  binary?: boolean | string;
  launcher?: string[];
  /** Extra environment of the gateway process. */
  env?: Record<string, string>;
  dataDir?: string;
  /** Extra or replacement providers, given the upstream (auth, api); may start servers of its own first (async). */
  providers?: (auth: UpstreamAuth, api: UpstreamApi) => GatewayOptions["providers"] | Promise<GatewayOptions["providers"]>;
  /** Only the providers of `providers`, none of the standard ones (native mode fronts exactly one). */
  onlyProviders?: boolean;
}

/** The sample mail provider: oidc-provider as its OAuth server (client_secret_post), the sample API as its API. */
export function mailProvider(auth: UpstreamAuth, api: UpstreamApi, extra: Record<string, unknown> = {}) {
  return {
    display_name: "Sample Mail",
    available_scopes: MAIL_SCOPES,
    authorize_endpoint: auth.authorizeEndpoint,
    token_endpoint: auth.tokenEndpoint,
    api_base_url: api.baseUrl,
    client_id: auth.postClient.client_id,
    client_secret: auth.postClient.client_secret,
    ...extra,
  };
}

export async function startWorld(o: WorldOptions = {}): Promise<World> {
  const port = await freePort();
  const auth = await startUpstreamAuth({ redirectUris: [`http://127.0.0.1:${port}/ath/callback`], accessTokenTtl: o.accessTokenTtl });
  const api = await startUpstreamApi(auth);
  const common = {
    authorize_endpoint: auth.authorizeEndpoint,
    token_endpoint: auth.tokenEndpoint,
  };
  const standard: GatewayOptions["providers"] = {
    mail: {
      display_name: "Sample Mail",
      available_scopes: MAIL_SCOPES,
      ...common,
      api_base_url: api.baseUrl,
      client_id: auth.postClient.client_id,
      client_secret: "${E2E_MAIL_SECRET}",
      token_endpoint_auth_method: "client_secret_post",
    },
    mailrules: {
      display_name: "Sample Mail (scope rules)",
      available_scopes: MAIL_SCOPES,
      ...common,
      api_base_url: api.baseUrl,
      client_id: auth.basicClient.client_id,
      client_secret: auth.basicClient.client_secret,
      token_endpoint_auth_method: "client_secret_basic",
      revocation_endpoint: auth.revocationEndpoint,
      scope_rules: { "mail:read": ["GET /v1/messages", "GET /v1/messages/**"], "mail:send": ["POST /v1/messages"] },
    },
    calendar: {
      display_name: "Sample Calendar",
      available_scopes: ["openid", "calendar:read"],
      ...common,
      api_base_url: `${api.baseUrl}/v1`,
      client_id: auth.postClient.client_id,
      client_secret: auth.postClient.client_secret,
    },
  };
  const extra = await o.providers?.(auth, api);
  const providers = o.onlyProviders ? { ...extra } : { ...standard, ...extra };
  let gw: Gateway;
  try {
    gw = await startGateway({
      port,
      providers,
      env: { E2E_MAIL_SECRET: auth.postClient.client_secret, ...o.env },
      extraArgs: o.extraArgs,
      binary: o.binary,
      launcher: o.launcher,
      dataDir: o.dataDir,
    });
  } catch (error) {
    await api.stop();
    await auth.stop();
    throw error;
  }
  return {
    auth,
    api,
    gw,
    baseUrl: gw.baseUrl,
    async stop() {
      await gw.cleanup();
      await api.stop();
      await auth.stop();
    },
  };
}

/** The app of the native-mode tests: oidc-provider as its OAuth server, the sample API as its API. */
export const NATIVE_APP = "com.example.notes";

/**
 * A world of `ath serve --mode native` fronting NATIVE_APP (the binary), with `scope_rules` of the caller's choice
 * and any extra serve flags.
 */
export function startNativeWorld(o: { scopeRules?: Record<string, string[]>; extraArgs?: string[]; extra?: Record<string, unknown> }): Promise<World> {
  return startWorld({
    binary: true,
    onlyProviders: true,
    extraArgs: ["--mode", "native", ...(o.extraArgs ?? [])],
    providers: (auth, api) => ({
      [NATIVE_APP]: {
        display_name: "Example Notes",
        available_scopes: MAIL_SCOPES,
        authorize_endpoint: auth.authorizeEndpoint,
        token_endpoint: auth.tokenEndpoint,
        revocation_endpoint: auth.revocationEndpoint,
        api_base_url: api.baseUrl,
        client_id: auth.basicClient.client_id,
        client_secret: auth.basicClient.client_secret,
        token_endpoint_auth_method: "client_secret_basic",
        ...(o.scopeRules ? { scope_rules: o.scopeRules } : {}),
        ...o.extra,
      },
    }),
  });
}
