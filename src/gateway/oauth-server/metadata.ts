/**
 * The documents MCP clients discover ath by (DESIGN §18): RFC 8414 authorization-server metadata (also served as
 * `/.well-known/openid-configuration`, which some clients try first) and, per fronted MCP server, RFC 9728
 * protected-resource metadata.
 */
import { AthError, GRANT_TYPES } from "../../protocol/index.ts";
import { MCP_PATHS } from "../../protocol/mcp-front-door.ts";
import type { Call } from "../context.ts";
import { json } from "../http/response.ts";
import { advertisedScopes, findMcpProvider, listMcpProviders, resourceOf } from "../mcp/providers.ts";
import { federationResource, findFederation } from "../mcp/federation.ts";

export async function authorizationServerMetadata(call: Call): Promise<Response> {
  const { gw } = call;
  const base = gw.opts.baseUrl;
  const scopes = new Set<string>();
  for (const p of await listMcpProviders(gw)) for (const s of p.config.available_scopes) scopes.add(s);
  return json(
    {
      issuer: base,
      authorization_endpoint: base + MCP_PATHS.authorize,
      token_endpoint: base + MCP_PATHS.token,
      registration_endpoint: base + MCP_PATHS.register,
      scopes_supported: [...scopes],
      response_types_supported: ["code"],
      response_modes_supported: ["query"],
      // DESIGN §23: an enterprise IdP's ID-JAG (RFC 7523 §2.1), from a trusted issuer
      grant_types_supported: ["authorization_code", "refresh_token", GRANT_TYPES.jwtBearer],
      token_endpoint_auth_methods_supported: ["none", "client_secret_post", "client_secret_basic"],
      code_challenge_methods_supported: ["S256"],
      client_id_metadata_document_supported: true,
      authorization_response_iss_parameter_supported: true,
    },
    200,
    { "cache-control": "public, max-age=300" },
  );
}

export async function protectedResourceMetadata(call: Call): Promise<Response> {
  const { gw } = call;
  const id = call.params.provider_id!;
  const record = await findMcpProvider(gw, id);
  if (!record) throw new AthError("NOT_FOUND", `No MCP server '${id}' is fronted here`);
  return json(
    {
      resource: resourceOf(gw, id),
      authorization_servers: [gw.opts.baseUrl],
      // MCP 2026-07-28: offline_access is not advertised by the resource (the authorization server's metadata offers it)
      scopes_supported: advertisedScopes(record),
      bearer_methods_supported: ["header"],
      resource_name: record.config.display_name,
    },
    200,
    { "cache-control": "public, max-age=300" },
  );
}

/**
 * RFC 9728 for a federated MCP URL (DESIGN §22): `{base_url}/mcp` or `{base_url}/mcp/g/{group}` is one resource; its
 * scopes are its members' (a sign-in there asks for those of the member signed in at).
 */
export async function federatedResourceMetadata(call: Call): Promise<Response> {
  const { gw } = call;
  const group = call.params.group ?? null;
  const f = await findFederation(gw, group);
  if (!f) throw new AthError("NOT_FOUND", group === null ? "No MCP server is fronted here" : `No MCP group '${group}' is served here`);
  return json(
    {
      resource: federationResource(gw, group),
      authorization_servers: [gw.opts.baseUrl],
      scopes_supported: [...new Set(f.members.flatMap((m) => advertisedScopes(m.record)))],
      bearer_methods_supported: ["header"],
      resource_name: group === null ? "Every MCP server of this gateway" : `MCP group ${group}`,
    },
    200,
    { "cache-control": "public, max-age=300" },
  );
}
