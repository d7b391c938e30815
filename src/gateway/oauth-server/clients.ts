/**
 * Who an MCP client is (DESIGN §18): a client registered here (RFC 7591, `mcp_…`), or an https `client_id` naming its
 * client ID metadata document — fetched the way agent identity documents are (identity/agent-keys.ts), cached as its
 * Cache-Control allows (≤ 5 min). Either way the client acts as an agent record (`mcp_…` client id) so that every
 * consent, token, grant, approval and revocation rule of the gateway applies to it unchanged.
 */
import { isIP } from "node:net";
import { z } from "zod";
import { MCP_PREFIX } from "../../protocol/mcp-front-door.ts";
import type { McpClientMetadata } from "../../store/mcp-types.ts";
import type { Gateway } from "../context.ts";
import { hashSecret } from "../crypto/secrets.ts";
import { findMcpClient } from "../domain/mcp-clients.ts";
import { fetchPublicDocument } from "../identity/agent-keys.ts";
import { OAuthError } from "./errors.ts";

export interface ResolvedClient {
  /** The OAuth client_id as the client sends it. */
  clientId: string;
  /** The agent record's client id (`mcp_…`). */
  agentClientId: string;
  /** The agent record's agent_id: `mcp:<client_id>`. */
  agentId: string;
  metadata: McpClientMetadata;
  /** SHA-256 of its secret, for confidential clients registered here. */
  secretHash: string | null;
  /** Whether the metadata came from a document at the client_id URL. */
  document: boolean;
}

/** RFC 7591 client metadata, as registered or as a metadata document states it (unknown fields ignored). */
export const ClientMetadata = z.object({
  redirect_uris: z.array(z.string().max(2000)).min(1).max(20),
  client_name: z.string().max(200).optional(),
  client_uri: z.string().max(2000).optional(),
  logo_uri: z.string().max(2000).optional(),
  grant_types: z.array(z.string().max(100)).max(10).default(["authorization_code"]),
  response_types: z.array(z.string().max(100)).max(10).default(["code"]),
  token_endpoint_auth_method: z.enum(["none", "client_secret_post", "client_secret_basic"]).default("client_secret_basic"),
  scope: z.string().max(4000).optional(),
  software_id: z.string().max(200).optional(),
  software_version: z.string().max(200).optional(),
});

/** Whether a client_id names a metadata document (https, or http to a loopback host under --dev). */
export function isDocumentClientId(gw: Gateway, clientId: string): boolean {
  if (!URL.canParse(clientId)) return false;
  const u = new URL(clientId);
  if (u.protocol === "https:") return true;
  return gw.opts.dev && u.protocol === "http:" && ["127.0.0.1", "[::1]", "localhost"].includes(u.hostname);
}

/** The client, or null when unknown or its document cannot be had (the reason goes to `why`). */
export async function resolveClient(gw: Gateway, clientId: string, why: (reason: string) => void = () => undefined): Promise<ResolvedClient | null> {
  if (clientId.startsWith(MCP_PREFIX.client) && clientId.length <= 100) {
    const c = await findMcpClient(gw, clientId);
    if (!c) return null;
    return { clientId, agentClientId: clientId, agentId: `mcp:${clientId}`, metadata: c.metadata, secretHash: c.client_secret_hash, document: false };
  }
  if (!isDocumentClientId(gw, clientId) || clientId.length > 2000) return null;
  const u = new URL(clientId);
  // A metadata document's URL names a document: it has a path and no fragment (the MCP client ID metadata draft).
  if (u.pathname === "/" || u.hash !== "" || u.username || u.password) {
    why("a client_id URL must have a path and no fragment or credentials");
    return null;
  }
  const metadata = await documentMetadata(gw, clientId, why);
  if (!metadata) return null;
  const agentClientId = MCP_PREFIX.client + "doc_" + hashSecret(clientId).slice(0, 40);
  return { clientId, agentClientId, agentId: `mcp:${clientId}`, metadata, secretHash: null, document: true };
}

/** The host the client's redirect URIs point at, named on the consent page. */
export function redirectHost(m: McpClientMetadata): string {
  const hosts = [...new Set(m.redirect_uris.filter((u) => URL.canParse(u)).map((u) => new URL(u).host))];
  return hosts.join(", ") || "none";
}

/**
 * Whether every redirect URI of the client is on this machine (a local app: anyone could have registered it) — a
 * loopback host in any of its forms, or a native app's private-use scheme.
 */
export function localhostOnly(m: McpClientMetadata): boolean {
  return m.redirect_uris.every((uri) => {
    if (!URL.canParse(uri)) return false;
    const u = new URL(uri);
    return u.protocol === "http:" || u.protocol === "https:" ? isLoopbackHost(u.hostname) : true;
  });
}

/**
 * Why ath refuses a redirect URI, or null (OAuth 2.1 §2.3.1, §7.5.1; RFC 8252 §7; RFC 7591 §2): https to any host;
 * http only to this machine's loopback (RFC 8252 §7.3 — `--dev` changes nothing here); a native app's private-use
 * scheme (RFC 8252 §7.1); never userinfo (it shows a trusted name before another host), a fragment (RFC 6749
 * §3.1.2), control characters or spaces (a URL parser drops tabs and line breaks, the string is stored and shown as
 * sent), or a scheme a browser runs or fetches itself.
 */
export function redirectUriProblem(uri: string): string | null {
  if (/[\u0000-\u0020\u007f]/.test(uri)) return "a redirect URI must not contain spaces or control characters";
  if (!URL.canParse(uri)) return `not an absolute URI: ${uri.slice(0, 200)}`;
  const u = new URL(uri);
  if (uri.includes("#")) return "a redirect URI must not have a fragment";
  if (u.username || u.password || /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*@/i.test(uri)) return "a redirect URI must not carry userinfo (user@host)";
  const scheme = u.protocol.slice(0, -1);
  if (scheme === "https") return null;
  if (scheme === "http") return isLoopbackHost(u.hostname) ? null : "http redirect URIs must be loopback (127.0.0.1, [::1], localhost); use https";
  if (NOT_PRIVATE_USE.has(scheme)) return `${scheme}: redirect URIs are not allowed`;
  return null;
}

/** Throws invalid_redirect_uri for the first redirect URI ath does not take. */
export function checkRedirectUris(uris: string[]): void {
  for (const uri of uris) {
    const problem = redirectUriProblem(uri);
    if (problem) throw new OAuthError("invalid_redirect_uri", problem);
  }
}

// internal

const documents = new WeakMap<Gateway, Map<string, { metadata: McpClientMetadata; until: number }>>();
const MAX_CACHED_DOCUMENTS = 1000;

async function documentMetadata(gw: Gateway, url: string, why: (reason: string) => void): Promise<McpClientMetadata | null> {
  let cache = documents.get(gw);
  if (!cache) documents.set(gw, (cache = new Map()));
  const hit = cache.get(url);
  if (hit && hit.until > gw.now()) return hit.metadata;
  let text: string;
  let cacheMs: number;
  try {
    ({ text, cacheMs } = await fetchPublicDocument(url, { dev: gw.opts.dev, fetch: gw.fetch }));
  } catch (err) {
    why(`the client metadata document could not be fetched: ${err instanceof Error ? err.message : "unknown error"}`);
    return null;
  }
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    why("the client metadata document is not JSON");
    return null;
  }
  const parsed = ClientMetadata.extend({ client_id: z.string() }).safeParse(doc);
  if (!parsed.success) {
    why("the client metadata document is not valid client metadata");
    return null;
  }
  if (parsed.data.client_id !== url) {
    why("the client metadata document names another client_id");
    return null;
  }
  const problem = parsed.data.redirect_uris.map(redirectUriProblem).find((p) => p !== null);
  if (problem) {
    why(`the client metadata document lists a redirect URI ath does not take: ${problem}`);
    return null;
  }
  if (parsed.data.token_endpoint_auth_method !== "none" && (doc as Record<string, unknown>).token_endpoint_auth_method !== undefined) {
    // A document cannot carry a shared secret: such clients authenticate with private_key_jwt, which ath does not take.
    why("a metadata-document client must use token_endpoint_auth_method none");
    return null;
  }
  const { client_id: _, ...rest } = parsed.data;
  const metadata: McpClientMetadata = { ...rest, token_endpoint_auth_method: "none" };
  cache.delete(url);
  if (cacheMs > 0) cache.set(url, { metadata, until: gw.now() + cacheMs });
  while (cache.size > MAX_CACHED_DOCUMENTS) cache.delete(cache.keys().next().value as string);
  return metadata;
}

/** Schemes a browser handles itself (web, script, local content): never a native app's private-use scheme. */
const NOT_PRIVATE_USE = new Set(["http", "https", "ws", "wss", "ftp", "file", "javascript", "data", "vbscript", "blob", "about", "filesystem", "view-source"]);

/**
 * A host on this machine, in the forms a URL parser leaves it: `localhost` and `*.localhost` (RFC 6761 §6.3, a
 * trailing dot allowed), 127.0.0.0/8, [::1], and IPv4-mapped loopback ([::ffff:127.0.0.1] parses as [::ffff:7f00:1]).
 */
function isLoopbackHost(hostname: string): boolean {
  const h = hostname.toLowerCase().replace(/\.$/, "");
  if (h === "localhost" || h.endsWith(".localhost")) return true;
  if (isIP(h) === 4) return h.startsWith("127.");
  return h === "[::1]" || /^\[::ffff:7f[0-9a-f]{2}:[0-9a-f]{1,4}\]$/.test(h);
}
