/**
 * A delegated token's budget share (DESIGN §23): `budget` calls over its life, kept in a budget row of its own (the
 * budgets' table, `ath admin budgets` lists it) — opened at 0 used when the token is minted, counted by each of its
 * calls like every budget (domain/budgets.ts: one conditional statement), and carved from by its own children's shares
 * (store `carveBudget`). The row lives as long as the token.
 */
import type { BudgetRule } from "../../protocol/index.ts";
import type { Store, TokenRecord } from "../../store/types.ts";
import type { BudgetHit } from "./budgets.ts";

/** The budget row of a delegated token's share. */
export function delegationBudgetKey(tokenId: string): string {
  return `delegation:${tokenId}`;
}

/** Opens the share's row (inside the minting transaction). */
export async function openShare(tx: Store, token: TokenRecord, budget: number, parentTokenId: string): Promise<void> {
  await tx.openBudget({
    bkey: delegationBudgetKey(token.token_id),
    window_start: 0,
    limit: budget,
    provider_id: token.provider_id,
    client_id: token.client_id,
    user_id: token.user_id,
    rule: `delegated share of ${token.token_id} (from ${parentTokenId}) · ${budget} calls`,
    expires_at: token.expires_at,
  });
}

/** The budget every call of a token with a share counts against (none for other tokens). */
export function shareHit(token: TokenRecord): BudgetHit[] {
  const budget = token.delegation?.budget;
  if (budget === null || budget === undefined) return [];
  const rule: BudgetRule = { match: ["* /**"], per: "agent", limit: budget, window: "30d", then: "deny", approver: "user", ttl: 300 };
  return [
    {
      rule,
      delegated: true,
      usage: {
        bkey: delegationBudgetKey(token.token_id),
        window_start: 0,
        limit: budget,
        provider_id: token.provider_id,
        client_id: token.client_id,
        user_id: token.user_id,
        rule: `delegated share of ${token.token_id} · ${budget} calls`,
        expires_at: token.expires_at,
      },
    },
  ];
}
