/**
 * Which MCP wire a request at the front door speaks (DESIGN §21): a POST whose `MCP-Protocol-Version` header names
 * 2026-07-28 (or a later dated revision), or one of whose messages carries a protocol version in `_meta` (the 2026
 * envelope), is the stateless wire; everything else — `initialize`, a request of a 2025 session, GET and DELETE, a POST with neither — is the
 * stateful one (a session is then required, as 2025-11-25 says). The body's claim wins over the header: a header that
 * disagrees with it is refused by the header checks (headers.ts), never read as another wire.
 */
import { MCP_META, MCP_WIRE } from "../../protocol/mcp-front-door.ts";
import type { Posted } from "./jsonrpc.ts";

export function isStateless(req: Request, posted: Posted): boolean {
  if (req.method !== "POST") return false;
  if (isModern(req.headers.get("mcp-protocol-version")?.trim())) return true;
  // a protocol version in `_meta` claims the per-request envelope, whatever version it names (2025-11-25 has none):
  // an unknown one is answered as 2026 answers it, unsupported (-32022), not as a request without a session
  return posted.messages.some((m) => {
    const meta = (m.raw.params as { _meta?: Record<string, unknown> } | undefined)?._meta;
    return meta !== null && typeof meta === "object" && typeof meta[MCP_META.protocolVersion] === "string";
  });
}

// internal

/** A dated revision from 2026-07-28 on (revisions are ISO dates: they compare as strings). */
function isModern(v: unknown): boolean {
  return typeof v === "string" && /^\d{4}-\d{2}-\d{2}$/.test(v) && v >= MCP_WIRE.stateless;
}
