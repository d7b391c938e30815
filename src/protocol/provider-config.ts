/**
 * The provider configuration entry (spec §2.1 plus DESIGN.md §3 optional fields): the `--providers` file
 * and the body of POST /ath/admin/providers.
 */
import { z } from "zod";
import { httpUrl } from "./schemas.ts";

export const ProviderConfig = z.object({
  display_name: z.string().min(1).max(200),
  available_scopes: z.array(z.string().min(1).max(512)).max(200),
  authorize_endpoint: httpUrl,
  token_endpoint: httpUrl,
  api_base_url: httpUrl.optional(),
  client_id: z.string().min(1).max(1024),
  client_secret: z.string().max(4096),
  // optional extensions
  /** Per scope, the requests it allows: `"METHOD /path/glob"`, `*` one segment, `**` any rest. */
  scope_rules: z.record(z.string(), z.array(z.string().regex(/^[A-Z*]+ \/\S*$/, "expected \"METHOD /path\""))).optional(),
  /** Human descriptions of scopes, shown on the consent page. */
  scope_descriptions: z.record(z.string(), z.string().max(500)).optional(),
  categories: z.array(z.string()).optional(),
  userinfo_endpoint: httpUrl.optional(),
  revocation_endpoint: httpUrl.optional(),
  token_endpoint_auth_method: z.enum(["client_secret_post", "client_secret_basic"]).default("client_secret_post"),
  extra_authorize_params: z.record(z.string(), z.string()).optional(),
  consent_screen: z.boolean().default(true),
  approval: z.enum(["auto", "manual"]).optional(),
  /** Scopes that always wait for an admin, whatever the approval policy. */
  review_scopes: z.array(z.string()).optional(),
});
export type ProviderConfig = z.infer<typeof ProviderConfig>;
export type ProviderConfigInput = z.input<typeof ProviderConfig>;

export const ProviderId = z
  .string()
  .regex(/^[a-z0-9][a-z0-9_.-]{0,63}$/, "provider ids are 1–64 of a-z 0-9 _ . - (starting with a letter or digit)");

export const AdminProviderRequest = ProviderConfig.extend({ provider_id: ProviderId });

export const ProvidersFile = z.record(ProviderId, ProviderConfig);
