/** Whether the gateway can serve (DESIGN §10, §14): the store answers a read of the database itself within a bound. */
import type { Gateway } from "../context.ts";

/** true when the store answered within `timeoutMs`; a store that fails or stalls is logged once per call. */
export async function storeAnswers(gw: Gateway, timeoutMs: number): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    // getMeta is never cached (store/cached.ts): this reads the database.
    await Promise.race([gw.store.getMeta("schema_version"), timeout]);
    return true;
  } catch (err) {
    gw.log.warn("not ready: the store does not answer", { error: err instanceof Error ? err.message : String(err) });
    return false;
  } finally {
    clearTimeout(timer);
  }
}
