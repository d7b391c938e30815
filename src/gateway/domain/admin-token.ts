/**
 * The admin token (DESIGN §4, §9): compared as hashes in constant time; given by the operator or generated once at
 * first start, when only its hash is kept. Who may act as the admin is a decision: the admin API's guard
 * (admin/auth.ts) and /ath/revoke both ask here.
 */
import { HEADERS } from "../../protocol/index.ts";
import type { Store } from "../../store/types.ts";
import type { Gateway } from "../context.ts";
import { constantTimeEqual, hashSecret, mintSecret } from "../crypto/secrets.ts";

/** Whether the request carries the admin token as `X-ATH-User-Token` (the admin API's header). */
export function sentAdminToken(gw: Gateway, req: Request): boolean {
  return isAdminToken(gw, req.headers.get(HEADERS.adminToken));
}

/** Whether `presented` is the admin token: the header's check, a bearer's, and the console's sign-in. */
export function isAdminToken(gw: Gateway, presented: string | null): boolean {
  return matchesHash(presented, gw.opts.adminTokenHash);
}

/** A presented secret against a stored hash, in constant time; an empty or missing one never matches. */
export function matchesHash(presented: string | null, hash: string): boolean {
  return presented !== null && presented !== "" && constantTimeEqual(hashSecret(presented), hash);
}

/**
 * The admin token's hash: the operator's token when given (its hash is stored, so giving one once resets a lost
 * token for later starts too); else the one stored at an earlier start; else a new token, whose hash is stored and
 * which is returned once (`generated`) to be shown — it is never shown again. Called only once the gateway listens,
 * so a start that fails before it keeps nothing that was never shown.
 */
export async function adminTokenHash(store: Store, given: string | undefined): Promise<{ hash: string; generated: string | null }> {
  if (given) {
    await store.setMeta(ADMIN_HASH_KEY, hashSecret(given));
    return { hash: hashSecret(given), generated: null };
  }
  const stored = await store.getMeta(ADMIN_HASH_KEY);
  if (stored) return { hash: stored, generated: null };
  const token = mintSecret("ath_admin_");
  await store.setMeta(ADMIN_HASH_KEY, hashSecret(token));
  return { hash: hashSecret(token), generated: token };
}

// internal

const ADMIN_HASH_KEY = "admin_token_hash";
