/**
 * DNS-rebinding protection at `/mcp/*` (DESIGN §21; MCP 2025-11-25 transports: "Servers MUST validate the Origin header
 * on all incoming connections … If the Origin header is present and invalid, servers MUST respond with HTTP 403"), on
 * both wires, before anything else — a token, a body, the upstream:
 * - `Origin`: present and neither the gateway's own origin nor one of `--mcp-allowed-origins` → 403.
 * - `Host`: checked only where rebinding reaches — a gateway whose base URL is on loopback (a developer's `ath serve`):
 *   there a `Host` that is not a loopback name is refused the same way. A public gateway does not check it: behind a
 *   proxy the Host may be an internal name, and a rebinding page at a public name reaches nothing a browser holds —
 *   every call needs a bearer token, which no page of another origin has (docs/mcp-front-door.md, "DNS rebinding").
 * The refusal is a JSON-RPC error without `id` (it answers no request: the body is not read).
 */
import type { Gateway } from "../context.ts";
import { JsonRpcError } from "../http/errors.ts";

/** Throws a 403 JsonRpcError when the request's Origin (or, on a loopback gateway, its Host) is not the gateway's. */
export function requireOwnOrigin(gw: Gateway, req: Request): void {
  const origin = req.headers.get("origin");
  if (origin !== null && !allowedOrigins(gw).has(origin.trim().toLowerCase())) {
    throw refused(`Origin ${JSON.stringify(origin.slice(0, 200))} may not call this MCP endpoint`, "origin_not_allowed");
  }
  const host = req.headers.get("host");
  if (host !== null && isLoopback(new URL(gw.opts.baseUrl).hostname) && !isLoopback(hostnameOf(host))) {
    throw refused(`Host ${JSON.stringify(host.slice(0, 200))} is not this gateway's`, "host_not_allowed");
  }
}

// internal

const LOOPBACK = new Set(["localhost", "127.0.0.1", "[::1]", "::1"]);

function isLoopback(hostname: string): boolean {
  const h = hostname.toLowerCase().replace(/\.$/, "");
  return LOOPBACK.has(h) || h.endsWith(".localhost") || /^127(?:\.\d{1,3}){3}$/.test(h);
}

/** The hostname of a Host header value (`name[:port]`, `[v6][:port]`); "" when it is not one. */
function hostnameOf(host: string): string {
  try {
    return new URL(`http://${host.trim()}`).hostname;
  } catch {
    return "";
  }
}

const cache = new WeakMap<Gateway, Set<string>>();

function allowedOrigins(gw: Gateway): Set<string> {
  let set = cache.get(gw);
  if (!set) cache.set(gw, (set = new Set([new URL(gw.opts.baseUrl).origin, ...(gw.opts.mcpAllowedOrigins ?? [])].map((o) => o.toLowerCase()))));
  return set;
}

function refused(message: string, reason: string): JsonRpcError {
  return new JsonRpcError(403, null, -32000, message, { reason }, false);
}
