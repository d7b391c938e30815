/** POST /oauth/register — RFC 7591 dynamic client registration for MCP clients (DESIGN §18). */
import { GRANT_TYPES } from "../../protocol/index.ts";
import { MCP_PREFIX } from "../../protocol/mcp-front-door.ts";
import type { Call } from "../context.ts";
import { hashSecret, mintSecret } from "../crypto/secrets.ts";
import { audit } from "../domain/audit.ts";
import { recordMcpClient } from "../domain/mcp-clients.ts";
import { readObject } from "../http/request.ts";
import { checkRedirectUris, ClientMetadata } from "./clients.ts";
import { noStoreJson, OAuthError } from "./errors.ts";

export async function register(call: Call): Promise<Response> {
  const { gw } = call;
  const body = await readObject(call, { form: false });
  const parsed = ClientMetadata.safeParse(body);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const field = issue.path.join(".") || "body";
    const code = field.startsWith("redirect_uris") ? "invalid_redirect_uri" : "invalid_client_metadata";
    throw new OAuthError(code, `${field}: ${issue.message}`);
  }
  const m = parsed.data;
  checkRedirectUris(m.redirect_uris);
  // DESIGN §23 "Pinned": a dynamically registered client may use the jwt-bearer grant (an enterprise IdP's ID-JAG)
  const grants = m.grant_types.filter((g) => g !== "authorization_code" && g !== "refresh_token" && g !== GRANT_TYPES.jwtBearer);
  if (grants.length) throw new OAuthError("invalid_client_metadata", `unsupported grant_types: ${grants.join(", ")}`);
  if (m.response_types.some((r) => r !== "code")) throw new OAuthError("invalid_client_metadata", "response_types must be [\"code\"]");

  const clientId = mintSecret(MCP_PREFIX.client, 16);
  const secret = m.token_endpoint_auth_method === "none" ? null : mintSecret(MCP_PREFIX.clientSecret);
  const now = gw.now();
  const metadata = {
    ...m,
    ...(m.client_name ? { client_name: m.client_name } : {}),
  };
  await recordMcpClient(gw, { client_id: clientId, client_secret_hash: secret ? hashSecret(secret) : null, metadata, created_at: now, authorized_at: null });
  await call.identify({ client_id: clientId });
  await audit(gw, "mcp.client_registered", { client_id: clientId, data: { client_name: m.client_name ?? null, redirect_uris: m.redirect_uris } });
  return noStoreJson(
    {
      client_id: clientId,
      ...(secret ? { client_secret: secret, client_secret_expires_at: 0 } : {}),
      client_id_issued_at: Math.floor(now / 1000),
      ...metadata,
    },
    201,
  );
}
