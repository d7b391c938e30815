/**
 * Requests ath makes of a 2025 client on a session it holds (DESIGN §21: a 2025 client in front of a 2026-only
 * upstream, whose `input_required` becomes the 2025 wire's server→client requests): the client posts its answer as a
 * JSON-RPC response on the session — to whichever instance its load balancer picks — and the instance whose stream
 * asked waits for it. The answer is kept sealed in the store until taken, once; an answer to a request nobody awaits
 * (or another session's) is refused.
 */
import type { TokenRecord } from "../../store/types.ts";
import type { Gateway } from "../context.ts";
import { hashSecret } from "../crypto/secrets.ts";

/** How often a waiting instance looks for the answer another instance took in. */
export const INPUT_POLL_MS = 100;

/** Starts awaiting the answer to request `requestId` ath sends on session `sessionId`. */
export async function awaitInput(gw: Gateway, token: TokenRecord, sessionId: string, requestId: string): Promise<void> {
  await gw.store.openMcpSessionInput(keyOf(token, sessionId, requestId), gw.now());
}

/** Records the client's answer (its JSON-RPC response); false when no request of ath's awaits it. */
export async function giveInput(gw: Gateway, token: TokenRecord, sessionId: string, requestId: string, answer: Record<string, unknown>): Promise<boolean> {
  const key = keyOf(token, sessionId, requestId);
  const ok = await gw.store.answerMcpSessionInput(key, await gw.sealer.seal(JSON.stringify(answer), aad(key)));
  if (ok) waiters.get(key)?.();
  return ok;
}

/** The client's answer once it came; null when `signal` ends the wait first. */
export async function takeInput(gw: Gateway, token: TokenRecord, sessionId: string, requestId: string, signal: AbortSignal): Promise<Record<string, unknown> | null> {
  const key = keyOf(token, sessionId, requestId);
  while (!signal.aborted) {
    const sealed = await gw.store.takeMcpSessionInput(key);
    if (sealed !== null) return JSON.parse(await gw.sealer.open(sealed, aad(key))) as Record<string, unknown>;
    // woken at once when the answer came to this instance; else the next look
    await new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        waiters.delete(key);
        signal.removeEventListener("abort", done);
        resolve();
      };
      const timer = setTimeout(done, INPUT_POLL_MS);
      waiters.set(key, done);
      signal.addEventListener("abort", done);
    });
  }
  return null;
}

// internal

/** This instance's waits, by key: an answer taken in here wakes its waiter without the next look. */
const waiters = new Map<string, () => void>();

function keyOf(token: TokenRecord, sessionId: string, requestId: string): string {
  return hashSecret(`${token.provider_id}\n${token.client_id}\n${token.user_id}\n${sessionId}\n${requestId}`);
}

function aad(key: string): string {
  return `mcp:session-input:${key}`;
}
