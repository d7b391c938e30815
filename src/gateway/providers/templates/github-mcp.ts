/**
 * GitHub's hosted MCP server, fronted by ath (DESIGN §18). Follows:
 * - https://github.com/github/github-mcp-server/blob/main/docs/remote-server.md — the server is
 *   https://api.githubcopilot.com/mcp/ (Streamable HTTP; toolsets at /mcp/x/<toolset>, `/readonly` for read-only);
 * - https://github.com/github/github-mcp-server/blob/main/docs/host-integration.md — it "requires a valid access
 *   token in the Authorization header" from a GitHub App or OAuth App (any valid token: it provides no authentication
 *   itself) and does not support dynamic client registration, so generic MCP clients cannot sign in to it directly;
 *   PKCE is recommended;
 * - the OAuth app documentation the `github` template follows (web application flow, scopes, revocation).
 *
 * ath is the MCP clients' authorization server (they register with ath), and GitHub's OAuth app is ath's own: each
 * person signs in at GitHub through ath, and the MCP server gets that person's token. GitHub enforces the OAuth scopes
 * on every tool itself; write `MCP tools/call …` scope_rules or approval_rules to narrow further.
 */
import { github } from "./github.ts";
import type { ProviderTemplate } from "./index.ts";

// The REST API's path rules say nothing about MCP tools (and never match an MCP call): not carried over.
const { scope_rules: _, ...oauth } = github.entry;

export const githubMcp: ProviderTemplate = {
  id: "github-mcp",
  docs: [
    "https://github.com/github/github-mcp-server/blob/main/docs/remote-server.md",
    "https://github.com/github/github-mcp-server/blob/main/docs/host-integration.md",
    ...github.docs,
  ],
  quirks: [
    "GitHub's hosted MCP server takes a GitHub user token as Bearer and offers no dynamic client registration: ath is the MCP clients' authorization server",
    "toolsets are separate URLs (mcp.url …/mcp/x/issues, …/mcp/readonly)",
    ...github.quirks,
  ],
  entry: {
    ...oauth,
    display_name: "GitHub (MCP)",
    mcp: { url: "https://api.githubcopilot.com/mcp/" },
  },
};
