/**
 * The upstream sessions ath holds (DESIGN §21): a 2026-07-28 client in front of an upstream that speaks only 2025-11-25
 * gets stateless semantics while ath keeps one upstream session per (provider, person, client, declared capabilities)
 * — in the store, so whichever instance serves the next request finds it (no sticky load balancing), replaced when the
 * upstream says it is gone (404). A 2026 client declares its capabilities per request; the session opened for them
 * declares the same at `initialize`, so the upstream asks only for what the client can answer. The upstream's session
 * id is a credential at the upstream: sealed at rest.
 */
import type { TokenRecord } from "../../store/types.ts";
import type { Gateway } from "../context.ts";
import { hashSecret } from "../crypto/secrets.ts";

export interface UpstreamSession {
  /** The upstream's Mcp-Session-Id; null when the upstream runs without sessions. */
  id: string | null;
  /** The upstream's answer to `initialize` (protocolVersion, capabilities, serverInfo, instructions). */
  opened: Record<string, unknown>;
  /** The row's sealed id: what a replacement is checked against. */
  sealed: string;
}

/** The session ath holds for this token's (provider, person, client) and `variant` (a hash of the capabilities), or null. */
export async function heldUpstreamSession(gw: Gateway, token: TokenRecord, variant: string): Promise<UpstreamSession | null> {
  const key = keyOf(token, variant);
  const row = await gw.store.getMcpUpstreamSession(key, gw.now());
  if (row === null) return null;
  try {
    const { id } = JSON.parse(await gw.sealer.open(row.session_sealed, aad(key))) as { id: string | null };
    return { id, opened: JSON.parse(row.opened) as Record<string, unknown>, sealed: row.session_sealed };
  } catch {
    return null; // sealed under another key (a rotated master key): open a new one
  }
}

/** Records the session just opened at the upstream for this token's (provider, person, client). */
export async function holdUpstreamSession(gw: Gateway, token: TokenRecord, variant: string, id: string | null, opened: Record<string, unknown>): Promise<UpstreamSession> {
  const key = keyOf(token, variant);
  const sealed = await gw.sealer.seal(JSON.stringify({ id }), aad(key));
  const now = gw.now();
  await gw.store.putMcpUpstreamSession({ session_key: key, session_sealed: sealed, opened: JSON.stringify(opened), created_at: now, used_at: now });
  return { id, opened, sealed };
}

/** Forgets a session the upstream no longer knows — unless another instance already replaced it. */
export async function releaseUpstreamSession(gw: Gateway, token: TokenRecord, variant: string, s: UpstreamSession): Promise<void> {
  await gw.store.dropMcpUpstreamSession(keyOf(token, variant), s.sealed);
}

// internal

function keyOf(token: TokenRecord, variant: string): string {
  return hashSecret(`${token.provider_id}\n${token.user_id}\n${token.client_id}\n${variant}`);
}

function aad(key: string): string {
  return `mcp:upstream-session:${key}`;
}
