/**
 * THE route table, as data: every endpoint of the gateway is one row — method, path template, what its errors look
 * like (`kind`), who may call it (`auth`), which rate budget it counts against (`limit`) and how large a body it reads
 * (`maxBody`). The pipeline (http/pipeline.ts) applies those columns; handlers only do their protocol step.
 */
import { LIMITS, PATHS } from "../protocol/index.ts";
import * as adminAgents from "./admin/agents.ts";
import * as adminApprovals from "./admin/approvals.ts";
import * as adminAudit from "./admin/audit.ts";
import * as adminBudgets from "./admin/budgets.ts";
import * as adminMcp from "./admin/mcp.ts";
import * as adminProviders from "./admin/providers.ts";
import * as adminTokens from "./admin/tokens.ts";
import * as adminIssuers from "./admin/trusted-issuers.ts";
import * as adminWebhooks from "./admin/webhooks.ts";
import * as adminConsole from "./console/handlers.ts";
import type { Handler, Route, RouteAuth, RouteKind, RouteLimit } from "./context.ts";
import { authorize } from "./endpoints/authorize.ts";
import { callback } from "./endpoints/callback.ts";
import { showConsent, submitConsent } from "./endpoints/consent.ts";
import { discovery, health, landing } from "./endpoints/discovery.ts";
import { introspect } from "./endpoints/introspect.ts";
import { metrics, ready } from "./endpoints/ops.ts";
import { appDiscovery } from "./endpoints/native.ts";
import { agentStatus } from "./endpoints/agent-status.ts";
import { updateRegistration } from "./endpoints/registration.ts";
import { showApproval, startSignin, submitApproval } from "./endpoints/approvals.ts";
import { register } from "./endpoints/register.ts";
import { revoke } from "./endpoints/revoke.ts";
import { token } from "./endpoints/token.ts";
import { proxy } from "./proxy/handler.ts";
import { mcp } from "./mcp/handler.ts";
import { federatedMcp } from "./mcp/federated.ts";
import { MCP_PATHS } from "../protocol/mcp-front-door.ts";
import { authorize as mcpAuthorize, finish as mcpReturn } from "./oauth-server/authorize.ts";
import { authorizationServerMetadata, federatedResourceMetadata, protectedResourceMetadata } from "./oauth-server/metadata.ts";
import { register as mcpRegister } from "./oauth-server/register.ts";
import { token as mcpToken } from "./oauth-server/token.ts";

export interface RouteFeatures {
  /** `--max-body`: the largest protocol request body, in bytes. */
  maxBody?: number;
  /** `ath serve --demo`: the sandbox provider under /demo/. */
  demo: boolean;
  /** `ath serve --mode native`: the app's discovery document and its API under /api (DESIGN §7). */
  native: boolean;
}

/** The gateway's routes; optional features add their rows. */
/**
 * The path prefixes Bun.serve matches natively (its `routes`, serve.ts) and hands to a router of their rows alone
 * (http/router.ts createPrefixRouter): the doors every call goes through — the proxy, the native API, MCP. Each ends in
 * "/"; Bun's pattern is the prefix and "*".
 */
export function fastPrefixes(features: Pick<RouteFeatures, "native">): string[] {
  return [`${PATHS.proxy}/`, `${MCP_PATHS.mcp}/`, ...(features.native ? [`${PATHS.nativeApi}/`] : [])];
}

export function routeTable(features: RouteFeatures): Route[] {
  const maxBody = features.maxBody ?? LIMITS.maxBodyBytes;
  const row = (name: string, method: string, path: string, kind: RouteKind, handler: Handler, o: RowOptions = {}) =>
    makeRow(name, method, path, kind, handler, { maxBody, ...o });
  return [
    row("discovery", "GET", PATHS.discovery, "api", discovery),
    row("health", "GET", PATHS.health, "api", health),
    row("landing", "GET", "/", "page", landing),
    // Operating (DESIGN §10)
    row("ready", "GET", PATHS.ready, "api", ready),
    row("metrics", "GET", PATHS.metrics, "api", metrics, { auth: "metrics" }),
    // Evidence (DESIGN §20): the public key the audit chain's checkpoints are signed with
    row("audit-key", "GET", PATHS.auditKey, "api", adminAudit.publicKey),

    // Phase A and B (DESIGN §3)
    row("register", "POST", PATHS.register, "api", register, { limit: "register" }),
    row("agent-status", "GET", PATHS.agentStatus, "api", agentStatus, { limit: "auth" }),
    row("authorize", "POST", PATHS.authorize, "api", authorize, { limit: "auth" }),
    row("consent", "GET", `${PATHS.consent}/{handle}`, "page", showConsent),
    row("consent.decide", "POST", `${PATHS.consent}/{handle}`, "page", submitConsent),
    row("callback", "GET", PATHS.callback, "page", callback),
    row("token", "POST", PATHS.token, "api", token, { limit: "auth" }),
    row("revoke", "POST", PATHS.revoke, "api", revoke),
    row("introspect", "POST", PATHS.introspect, "api", introspect, { auth: "introspection" }),
    row("registration.update", "PATCH", PATHS.agentRegistration, "api", updateRegistration, { limit: "auth" }),

    // Per-request approvals (DESIGN §15): the agent polls (JSON with its bearer), a person decides (the page)
    row("approval", "GET", `${PATHS.approvals}/{approval_id}`, "page", showApproval, { limit: "proxy" }),
    row("approval.decide", "POST", `${PATHS.approvals}/{approval_id}`, "page", submitApproval, { maxBody: 4096 }),
    row("approval.signin", "POST", `${PATHS.approvals}/{approval_id}/signin`, "page", startSignin, { maxBody: 4096 }),

    // The proxy streams its bodies: maxBody does not apply to them.
    row("proxy", "*", `${PATHS.proxy}/{provider_id}/*`, "proxy", proxy, { limit: "proxy" }),
    // Native mode: the app's API is the proxy without the provider segment — the same handler, the same rules.
    ...(features.native
      ? [
          row("app-discovery", "GET", PATHS.appDiscovery, "api", appDiscovery),
          row("api", "*", `${PATHS.nativeApi}/*`, "proxy", proxy, { limit: "proxy" }),
        ]
      : []),

    // The MCP front door (DESIGN §18): ath as the authorization server and resource server of MCP clients, and the
    // Streamable HTTP proxy to each remote MCP server (its bodies stream: maxBody does not apply to them)
    row("oauth.metadata", "GET", MCP_PATHS.authorizationServer, "api", authorizationServerMetadata),
    row("oauth.openid-configuration", "GET", MCP_PATHS.openidConfiguration, "api", authorizationServerMetadata),
    row("mcp.resource-metadata", "GET", `${MCP_PATHS.protectedResource}${MCP_PATHS.mcp}/{provider_id}`, "api", protectedResourceMetadata),
    row("oauth.register", "POST", MCP_PATHS.register, "oauth", mcpRegister, { limit: "register" }),
    row("oauth.authorize", "GET", MCP_PATHS.authorize, "page", mcpAuthorize, { limit: "auth" }),
    row("oauth.return", "GET", MCP_PATHS.return, "page", mcpReturn),
    row("oauth.token", "POST", MCP_PATHS.token, "oauth", mcpToken, { limit: "auth" }),
    row("mcp", "*", `${MCP_PATHS.mcp}/{provider_id}`, "mcp", mcp, { limit: "proxy" }),
    // One MCP URL for many servers (DESIGN §22): every MCP provider, or a group of the providers file
    row("mcp.federated-resource-metadata", "GET", `${MCP_PATHS.protectedResource}${MCP_PATHS.mcp}`, "api", federatedResourceMetadata),
    row("mcp.group-resource-metadata", "GET", `${MCP_PATHS.protectedResource}${MCP_PATHS.mcp}/g/{group}`, "api", federatedResourceMetadata),
    row("mcp.federated", "*", MCP_PATHS.mcp, "mcp", federatedMcp, { limit: "proxy" }),
    row("mcp.group", "*", `${MCP_PATHS.mcp}/g/{group}`, "mcp", federatedMcp, { limit: "proxy" }),

    // Admin API (DESIGN §9)
    row("admin.providers.list", "GET", PATHS.adminProviders, "api", adminProviders.list, { auth: "admin" }),
    row("admin.providers.create", "POST", PATHS.adminProviders, "api", adminProviders.create, { auth: "admin" }),
    row("admin.providers.get", "GET", `${PATHS.adminProviders}/{provider_id}`, "api", adminProviders.get, { auth: "admin" }),
    row("admin.providers.put", "PUT", `${PATHS.adminProviders}/{provider_id}`, "api", adminProviders.put, { auth: "admin" }),
    row("admin.providers.delete", "DELETE", `${PATHS.adminProviders}/{provider_id}`, "api", adminProviders.remove, { auth: "admin" }),
    row("admin.agents.list", "GET", PATHS.adminAgents, "api", adminAgents.list, { auth: "admin" }),
    row("admin.agents.get", "GET", `${PATHS.adminAgents}/{client_id}`, "api", adminAgents.get, { auth: "admin" }),
    row("admin.agents.patch", "PATCH", `${PATHS.adminAgents}/{client_id}`, "api", adminAgents.patch, { auth: "admin" }),
    row("admin.agents.delete", "DELETE", `${PATHS.adminAgents}/{client_id}`, "api", adminAgents.remove, { auth: "admin" }),
    row("admin.tokens.list", "GET", PATHS.adminTokens, "api", adminTokens.list, { auth: "admin" }),
    row("admin.tokens.revoke", "POST", PATHS.adminTokensRevoke, "api", adminTokens.revoke, { auth: "admin" }),
    row("admin.audit.list", "GET", PATHS.adminAudit, "api", adminAudit.list, { auth: "admin" }),
    row("admin.audit.export", "GET", PATHS.adminAuditExport, "api", adminAudit.exportChain, { auth: "admin" }),
    row("admin.webhooks.list", "GET", PATHS.adminWebhooks, "api", adminWebhooks.list, { auth: "admin" }),
    row("admin.webhooks.create", "POST", PATHS.adminWebhooks, "api", adminWebhooks.create, { auth: "admin" }),
    row("admin.webhooks.delete", "DELETE", `${PATHS.adminWebhooks}/{webhook_id}`, "api", adminWebhooks.remove, { auth: "admin" }),
    row("admin.approvals.list", "GET", PATHS.adminApprovals, "api", adminApprovals.list, { auth: "admin" }),
    row("admin.approvals.decide", "POST", `${PATHS.adminApprovals}/{approval_id}`, "api", adminApprovals.decideOne, { auth: "admin" }),
    row("admin.budgets.list", "GET", PATHS.adminBudgets, "api", adminBudgets.list, { auth: "admin" }),
    row("admin.mcp.federation", "GET", PATHS.adminMcp, "api", adminMcp.federation, { auth: "admin" }),
    // Enterprise and workload identity (DESIGN §23)
    row("admin.trusted-issuers.list", "GET", PATHS.adminTrustedIssuers, "api", adminIssuers.list, { auth: "admin" }),
    row("admin.trusted-issuers.create", "POST", PATHS.adminTrustedIssuers, "api", adminIssuers.create, { auth: "admin" }),
    row("admin.trusted-issuers.delete", "DELETE", `${PATHS.adminTrustedIssuers}/{issuer}`, "api", adminIssuers.remove, { auth: "admin" }),

    // Admin console (DESIGN §9): pages; the session cookie is checked by the handlers (sign-in is one of them)
    row("console", "GET", PATHS.adminConsole, "page", adminConsole.overview),
    row("console.slash", "GET", `${PATHS.adminConsole}/`, "page", adminConsole.overview),
    row("console.signin", "GET", `${PATHS.adminConsole}/signin`, "page", adminConsole.showSignin),
    row("console.signin.submit", "POST", `${PATHS.adminConsole}/signin`, "page", adminConsole.submitSignin, { maxBody: 4096 }),
    row("console.signout", "POST", `${PATHS.adminConsole}/signout`, "page", adminConsole.submitSignout, { maxBody: 4096 }),
    row("console.agents", "GET", `${PATHS.adminConsole}/agents`, "page", adminConsole.agents),
    row("console.agents.act", "POST", `${PATHS.adminConsole}/agents/{client_id}`, "page", adminConsole.agentAction, { maxBody: 4096 }),
    row("console.approvals", "GET", `${PATHS.adminConsole}/approvals`, "page", adminConsole.approvals),
    row("console.approvals.decide", "POST", `${PATHS.adminConsole}/approvals/{approval_id}`, "page", adminConsole.approvalAction, { maxBody: 4096 }),
    row("console.tokens", "GET", `${PATHS.adminConsole}/tokens`, "page", adminConsole.tokens),
    row("console.tokens.revoke", "POST", `${PATHS.adminConsole}/tokens/revoke`, "page", adminConsole.revokeAction, { maxBody: 8192 }),
    row("console.providers", "GET", `${PATHS.adminConsole}/providers`, "page", adminConsole.providers),
    row("console.providers.remove", "POST", `${PATHS.adminConsole}/providers/{provider_id}/remove`, "page", adminConsole.providerRemove, { maxBody: 4096 }),
    row("console.audit", "GET", `${PATHS.adminConsole}/audit`, "page", adminConsole.auditLog),
    row("console.mcp", "GET", `${PATHS.adminConsole}/mcp`, "page", adminConsole.mcp),
    row("console.webhooks", "GET", `${PATHS.adminConsole}/webhooks`, "page", adminConsole.webhooks),
    row("console.webhooks.remove", "POST", `${PATHS.adminConsole}/webhooks/{webhook_id}/remove`, "page", adminConsole.webhookRemove, { maxBody: 4096 }),
    // one agent's page: its approval rules, policy and budgets edited as JSON (DESIGN §15, §16)
    row("console.agent", "GET", `${PATHS.adminConsole}/agents/{client_id}`, "page", adminConsole.agentPage),
    row("console.agent.list", "POST", `${PATHS.adminConsole}/agents/{client_id}/{list}`, "page", adminConsole.agentListAction, { maxBody: 512 * 1024 }),

    ...(features.demo ? [row("demo", "*", "/demo/*", "page", (call) => call.gw.demo!.fetch(call.req))] : []),
  ];
}

// internal

interface RowOptions {
  auth?: RouteAuth;
  limit?: RouteLimit;
  maxBody?: number;
}

function makeRow(name: string, method: string, path: string, kind: RouteKind, handler: Handler, o: RowOptions = {}): Route {
  return {
    name,
    method,
    path,
    kind,
    auth: o.auth ?? "none",
    ...(o.limit ? { limit: o.limit } : {}),
    maxBody: o.maxBody ?? LIMITS.maxBodyBytes,
    handler,
  };
}
