/**
 * A delegated token's chain (DESIGN §23): whether it still stands — every ancestor live, read through the store's
 * cache, which a revocation invalidates at once here and on every other instance (store/cached.ts), so revoking any
 * ancestor refuses every descendant at once — the `act` claim it is shown with (RFC 8693 §4.1), and the descendants a
 * revocation takes down with it in the store (so lists and the audit trail say so too).
 */
import { AthError, type ActClaim } from "../../protocol/index.ts";
import type { Delegation } from "../../store/identity-types.ts";
import type { TokenRecord } from "../../store/types.ts";
import type { Gateway } from "../context.ts";

/** Every ancestor still live — else 401 TOKEN_REVOKED (DESIGN §23 "Pinned": a descendant killed with its root). */
export async function requireLiveChain(gw: Gateway, token: TokenRecord, headers?: Record<string, string>): Promise<void> {
  for (const link of token.delegation?.chain ?? []) {
    const ancestor = await gw.store.getToken(link.token_hash);
    if (!ancestor || ancestor.revoked_at !== null) {
      throw new AthError("TOKEN_REVOKED", "A token this one was delegated from was revoked", { reason: "ancestor_revoked" }, headers ? { headers } : undefined);
    }
  }
}

/** Whether every ancestor is still live (introspection's form of requireLiveChain). */
export async function chainIsLive(gw: Gateway, token: TokenRecord): Promise<boolean> {
  for (const link of token.delegation?.chain ?? []) {
    const ancestor = await gw.store.getToken(link.token_hash);
    if (!ancestor || ancestor.revoked_at !== null) return false;
  }
  return true;
}

/** RFC 8693 §4.1: the `act` claim of a delegated token — its parent, whose `act` is the grandparent's, and so on. */
export function actClaim(delegation: Delegation | null | undefined): ActClaim | undefined {
  let act: ActClaim | undefined;
  for (const link of [...(delegation?.chain ?? [])].reverse()) act = { sub: link.agent_id, client_id: link.client_id, ...(act ? { act } : {}) };
  return act;
}

/** Revokes, in the store, every live descendant of `revoked`; returns them (each invalidated in every cache). */
export function revokeDescendantsOf(gw: Gateway, revoked: readonly TokenRecord[]): Promise<TokenRecord[]> {
  return gw.store.revokeDescendants(revoked.map((t) => t.token_id), gw.now());
}
