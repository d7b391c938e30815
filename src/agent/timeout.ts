/**
 * The agent's HTTP timeout, apart from http.ts: every command's agent reads it (flows/agent.ts), `ath status`
 * among them, which makes no request and must not load http.ts's error-body schemas (zod) on its start (DESIGN §13).
 */

/** The default per-request timeout: 30 s. */
export const DEFAULT_TIMEOUT_MS = 30_000;

/** The timeout in force: `ATH_HTTP_TIMEOUT_MS` when it is a positive number, else 30 s. */
export function timeoutFromEnv(env: Record<string, string | undefined> = process.env): number {
  const n = Number(env.ATH_HTTP_TIMEOUT_MS);
  return Number.isFinite(n) && n > 0 ? n : DEFAULT_TIMEOUT_MS;
}
