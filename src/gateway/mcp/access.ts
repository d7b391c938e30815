/**
 * The resource-server side of the MCP front door (DESIGN §18, MCP authorization 2025-11-25): which tokens open
 * `{base_url}/mcp/{id}`, and the RFC 6750 / RFC 9728 challenges for those that do not — 401 pointing at the
 * protected-resource metadata (with the provider's scopes), 401 `invalid_token` for a token that is unknown, dead, or
 * issued for another resource (RFC 8707 audience), 403 `insufficient_scope` naming every scope the call needs.
 */
import { AthError } from "../../protocol/index.ts";
import type { AgentRecord, ProviderRecord, TokenRecord } from "../../store/types.ts";
import type { Gateway } from "../context.ts";
import { opensDoor, requireUsableToken } from "../domain/tokens.ts";
import { BearerChallenge } from "../http/errors.ts";
import { bearerToken } from "../http/request.ts";
import { advertisedScopes, resourceMetadataUrl, resourceOf } from "./providers.ts";

/** The token of a request to `record`'s MCP endpoint and its client's agent record — else a BearerChallenge (thrown). */
export function requireMcpToken(gw: Gateway, req: Request, record: ProviderRecord): Promise<{ token: TokenRecord; agent: AgentRecord }> {
  const resource = resourceOf(gw, record.provider_id);
  const path = resourcePath(resource);
  return requireTokenFor(gw, req, {
    resource,
    metadata: resourceMetadataUrl(gw, record.provider_id),
    scope: advertisedScopes(record).join(" "),
    // tokens minted before the resource was kept on them open their provider's URL
    opens: (t) => t.provider_id === record.provider_id && (t.resource == null || resourcePath(t.resource) === path),
  });
}

/**
 * The path of a resource URL (`/mcp/mail`, `/mcp`, `/mcp/g/work`), or null: tokens are compared by it, so instances of
 * one store behind different base URLs (a front and its instances) agree on which URL a token opens.
 */
export function resourcePath(resource: string): string | null {
  try {
    return new URL(resource).pathname.replace(/\/$/, "");
  } catch {
    return null;
  }
}

/** What a resource server of the MCP door says in its challenges, and which tokens it takes. */
export interface ResourceDoor {
  /** The RFC 8707 resource: `{base_url}/mcp/{id}`, `{base_url}/mcp`, `{base_url}/mcp/g/{group}`. */
  resource: string;
  /** Its RFC 9728 metadata document. */
  metadata: string;
  /** The scopes a 401 names. */
  scope: string;
  /** Whether a usable MCP client's token was issued for this resource. */
  opens(token: TokenRecord): boolean;
}

/** The token of a request to an MCP resource and its client's agent record — else a BearerChallenge (thrown). */
export async function requireTokenFor(gw: Gateway, req: Request, door: ResourceDoor): Promise<{ token: TokenRecord; agent: AgentRecord }> {
  const presented = bearerToken(req);
  const { metadata, scope } = door;
  if (presented === null) {
    throw new BearerChallenge(401, `Bearer resource_metadata="${metadata}", scope="${scope}"`, { error: "invalid_request", error_description: "A bearer token is required" });
  }
  const invalid = (why: string) =>
    new BearerChallenge(401, `Bearer error="invalid_token", error_description="${why}", resource_metadata="${metadata}", scope="${scope}"`, {
      error: "invalid_token",
      error_description: why,
    });
  let found: { token: TokenRecord; agent: AgentRecord };
  try {
    found = await requireUsableToken(gw, presented);
  } catch (err) {
    if (err instanceof AthError && (err.status === 401 || err.status === 403)) throw invalid(tokenProblem(err.code));
    throw err;
  }
  // RFC 8707: an MCP client's token is bound to one resource — one server's `/mcp/{id}` or one federated URL (DESIGN
  // §22); an ATH agent's token (bound to the proxy) and another resource's token are refused alike.
  if (!opensDoor(found.token, "mcp") || !door.opens(found.token)) throw invalid("The token was issued for another resource");
  return found;
}

/**
 * 401 invalid_token for a token whose person's upstream sign-in is gone (the grant was refused at refresh, or the
 * upstream still refuses it): the client is sent through the authorization again, which signs the person in anew.
 */
export function reauthorize(gw: Gateway, record: ProviderRecord, why: string): BearerChallenge {
  const metadata = resourceMetadataUrl(gw, record.provider_id);
  const scope = advertisedScopes(record).join(" ");
  return new BearerChallenge(401, `Bearer error="invalid_token", error_description="${why}", resource_metadata="${metadata}", scope="${scope}"`, {
    error: "invalid_token",
    error_description: why,
  });
}

/** 403 insufficient_scope (step-up): `scopes` are all the call needs, the token's own included. */
export function insufficientScope(gw: Gateway, record: ProviderRecord, scopes: readonly string[]): BearerChallenge {
  const metadata = resourceMetadataUrl(gw, record.provider_id);
  return new BearerChallenge(403, `Bearer error="insufficient_scope", scope="${scopes.join(" ")}", resource_metadata="${metadata}"`, {
    error: "insufficient_scope",
    error_description: `This call needs one of the scopes: ${scopes.join(" ")}`,
  });
}

// internal

function tokenProblem(code: string): string {
  if (code === "TOKEN_EXPIRED") return "The token expired";
  if (code === "TOKEN_REVOKED") return "The token was revoked";
  if (code === "AGENT_UNAPPROVED") return "The client was suspended";
  return "The token is not valid here";
}
