/**
 * The sessions of MCP's 2025-11-25 wire at the front door (DESIGN §18, §21; issue 35 #9): a session is bound to the
 * client AND the person whose token opened it — another client, or the same client for another person, presenting
 * its id is answered as for an unknown session (404), so a leaked id opens nothing. Kept in the store (any instance may
 * serve the session's next request), keyed by a hash of the provider and the session id, with what the client
 * declared when it opened it: whether it takes URL-mode elicitation, and — for a session ath holds itself (a 2025
 * client in front of a 2026-only upstream) — its capabilities, info and log level.
 */
import type { McpSessionRecord } from "../../store/mcp-types.ts";
import type { TokenRecord } from "../../store/types.ts";
import type { Gateway } from "../context.ts";
import { hashSecret } from "../crypto/secrets.ts";

/** What ath keeps of a session it holds itself. */
export interface HeldSession {
  protocolVersion: string;
  capabilities: Record<string, unknown>;
  clientInfo: Record<string, unknown>;
  /** Set by logging/setLevel; null: none set (every log is sent, as 2025 servers do). */
  logLevel: string | null;
  /** The resources the client subscribed to (resources/subscribe): what its GET stream is told about. */
  subscriptions: string[];
}

/** Whether an initialize request's capabilities declare URL-mode elicitation (`elicitation: {url: {}}`). */
export function declaresUrlElicitation(params: unknown): boolean {
  const caps = (params as { capabilities?: { elicitation?: { url?: unknown } } } | null)?.capabilities;
  return caps?.elicitation?.url !== undefined && caps.elicitation.url !== null && typeof caps.elicitation.url === "object";
}

/** Records a session just opened for this token's client and person (by the upstream, or — `held` — by ath). */
export async function rememberSession(gw: Gateway, token: TokenRecord, sessionId: string, urlElicitation: boolean, held: HeldSession | null = null): Promise<void> {
  await gw.store.recordMcpSession({
    session_key: sessionKey(token.provider_id, sessionId),
    client_id: token.client_id,
    user_id: token.user_id,
    url_elicitation: urlElicitation,
    held: held === null ? null : JSON.stringify(held),
    created_at: gw.now(),
  });
}

export interface BoundSession {
  id: string;
  urlElicitation: boolean;
  /** Set when ath holds the session itself. */
  held: HeldSession | null;
}

/**
 * The session the request names (`Mcp-Session-Id`), when it was opened by this token's client for this person; null
 * when the request names none; `"unknown"` when it names one that is not theirs (or not known at all).
 */
export async function boundSession(gw: Gateway, req: Request, token: TokenRecord): Promise<BoundSession | null | "unknown"> {
  const sid = req.headers.get("mcp-session-id");
  if (sid === null) return null;
  if (sid.length === 0 || sid.length > 256) return "unknown";
  const s = await gw.store.getMcpSession(sessionKey(token.provider_id, sid));
  if (!isTheirs(s, token)) return "unknown";
  return { id: sid, urlElicitation: s.url_elicitation, held: s.held === null ? null : (JSON.parse(s.held) as HeldSession) };
}

/** Replaces what ath keeps of a session it holds (logging/setLevel). */
export async function updateHeld(gw: Gateway, token: TokenRecord, sessionId: string, held: HeldSession): Promise<void> {
  await gw.store.updateMcpSessionHeld(sessionKey(token.provider_id, sessionId), JSON.stringify(held));
}

/** Forgets a session (ended by DELETE). */
export async function forgetSession(gw: Gateway, token: TokenRecord, sessionId: string): Promise<void> {
  await gw.store.deleteMcpSession(sessionKey(token.provider_id, sessionId));
}

// internal

function isTheirs(s: McpSessionRecord | null, token: TokenRecord): s is McpSessionRecord {
  return s !== null && s.client_id === token.client_id && s.user_id === token.user_id;
}

function sessionKey(providerId: string, sessionId: string): string {
  return hashSecret(`${providerId}:${sessionId}`);
}
