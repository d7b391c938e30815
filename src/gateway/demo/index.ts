/**
 * `ath serve --demo`: a small, clearly labelled sandbox OAuth 2.0 provider, a notes API and an MCP server over the
 * same notes, mounted under /demo and registered as provider `demo` — the API behind /ath/proxy/demo, the MCP server
 * behind the front door at /mcp/demo — so a newcomer can run both journeys offline. It is an outside world that
 * happens to run in process: it knows nothing of the gateway's domain or store, and the gateway reaches it over HTTP
 * like any provider. Its client credentials and signing key are new at every start; all state is in memory.
 */
import type { ProviderConfigInput } from "../../protocol/index.ts";
import { notesApi } from "./api.ts";
import { authorizeGet, authorizePost } from "./authorize.ts";
import { createContext, DEMO_SCOPES, SCOPE_DESCRIPTIONS } from "./context.ts";
import { json } from "./http.ts";
import { mcpServer } from "./mcp.ts";
import { jwks, revoke, token, userinfo } from "./oauth.ts";

export interface Demo {
  providerId: "demo";
  config: ProviderConfigInput;
  fetch(req: Request): Promise<Response>;
}

export function createDemo(o: { baseUrl: string; accessTokenTtlSeconds?: number }): Demo {
  const baseUrl = o.baseUrl.replace(/\/+$/, "");
  const ctx = createContext(baseUrl, o.accessTokenTtlSeconds ?? 3600);
  const mount = `${new URL(baseUrl).pathname.replace(/\/+$/, "")}/demo`;
  const config: ProviderConfigInput = {
    display_name: "Demo Notes (sandbox)",
    available_scopes: [...DEMO_SCOPES],
    scope_descriptions: { ...SCOPE_DESCRIPTIONS },
    authorize_endpoint: `${ctx.issuer}/oauth/authorize`,
    token_endpoint: `${ctx.issuer}/oauth/token`,
    revocation_endpoint: `${ctx.issuer}/oauth/revoke`,
    userinfo_endpoint: `${ctx.issuer}/oauth/userinfo`,
    api_base_url: `${ctx.issuer}/api`,
    mcp: { url: `${ctx.issuer}/mcp` },
    client_id: ctx.clientId,
    client_secret: ctx.clientSecret,
    token_endpoint_auth_method: "client_secret_post",
    scope_rules: {
      "notes:read": ["GET /notes", "GET /notes/*", "MCP tools/call list_notes"],
      "notes:write": ["POST /notes", "DELETE /notes/*", "MCP tools/call add_note", "MCP tools/call delete_note"],
    },
  };

  async function route(req: Request): Promise<Response> {
    const { pathname } = new URL(req.url);
    if (!pathname.startsWith(`${mount}/`)) return notFound();
    const path = pathname.slice(mount.length);
    if (path.startsWith("/api/")) return notesApi(req, path.slice("/api".length), ctx);
    if (path === "/mcp") return mcpServer(req, ctx);
    const endpoint = `${req.method} ${path}`;
    switch (endpoint) {
      case "GET /oauth/authorize":
        return authorizeGet(req, ctx);
      case "POST /oauth/authorize":
        return authorizePost(req, ctx);
      case "POST /oauth/token":
        return token(req, ctx);
      case "POST /oauth/revoke":
        return revoke(req, ctx);
      case "GET /oauth/userinfo":
      case "POST /oauth/userinfo":
        return userinfo(req, ctx);
      case "GET /oauth/jwks":
        return jwks(ctx);
    }
    const known = ["/oauth/authorize", "/oauth/token", "/oauth/revoke", "/oauth/userinfo", "/oauth/jwks"];
    return known.includes(path) ? json({ error: "method_not_allowed", error_description: `${req.method} is not allowed here` }, 405) : notFound();
  }

  return {
    providerId: "demo",
    config,
    async fetch(req) {
      try {
        return await route(req);
      } catch (err) {
        // the sandbox's own bug: no detail on the wire
        console.error("demo provider: internal error", err);
        return json({ error: "server_error", error_description: "internal error in the sandbox provider" }, 500);
      }
    },
  };
}

function notFound(): Response {
  return json({ error: "not_found", error_description: "no such sandbox endpoint" }, 404);
}
