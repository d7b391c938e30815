/**
 * The one error a Store throws when the database itself fails — disk full, read-only file, PostgreSQL down or
 * refusing, a constraint the decision did not expect — as opposed to a decision's own refusal. The gateway's error
 * boundary answers it with 503 SERVICE_UNAVAILABLE and `Retry-After` (DESIGN §14: never claim what did not happen).
 * The cause (the driver's error) is kept for the log and never reaches a client.
 */
export class StoreUnavailableError extends Error {
  override readonly name = "StoreUnavailableError";
  constructor(cause: unknown) {
    super(`the store failed: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
  }
}

/** `err` as a StoreUnavailableError (unchanged when it already is one). */
export function storeFailure(err: unknown): StoreUnavailableError {
  return err instanceof StoreUnavailableError ? err : new StoreUnavailableError(err);
}
