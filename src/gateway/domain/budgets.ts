/**
 * Budgets (DESIGN §16): at most `limit` matching calls per window, per agent (or agent and user), counted exactly
 * across instances — one conditional store update per counted call (store/sql/budgets.ts), no leases. A deny-list:
 * a budget applies when its match holds for either form of the canonical request. Past the limit, `deny` answers 429
 * BUDGET_EXHAUSTED (Retry-After: the window's end) and `approve` makes each further call wait for a person (§15),
 * counted once approved. No store round trip unless a budget matches.
 */
import { AthError, type ApprovalRule, type BudgetRule, type ProviderConfig } from "../../protocol/index.ts";
import { StoreUnavailableError } from "../../store/errors.ts";
import type { AgentRecord, BudgetUsage, TokenRecord } from "../../store/types.ts";
import type { Gateway } from "../context.ts";
import { actOf, audit } from "./audit.ts";

/** Window lengths, ms; windows are aligned to the Unix epoch (an hour starts on the hour, UTC). */
export const WINDOW_MS: Readonly<Record<BudgetRule["window"], number>> = { "1h": 3_600_000, "1d": 86_400_000, "30d": 30 * 86_400_000 };

export interface BudgetHit {
  rule: BudgetRule;
  /** A delegated token's share (DESIGN §23, domain/delegation-budget.ts): its calls over its whole life, no window. */
  delegated?: true;
  /** What is counted: the store row's key and description for this call's window. */
  usage: Omit<BudgetUsage, "used">;
}

/**
 * The budgets — the provider's, then the agent's own — whose `match` holds for the call (`matches`: either form of an
 * HTTP request, or the MCP call's key; a deny-list), with their rows for `now`.
 */
export function budgetsMatching(config: ProviderConfig, agent: AgentRecord | null, matches: (match: readonly string[]) => boolean, token: TokenRecord, now: number): BudgetHit[] {
  const hits: BudgetHit[] = [];
  for (const [from, rules] of [["provider", config.budgets], ["agent", agent?.budgets]] as const) {
    (rules ?? []).forEach((rule, index) => {
      if (!matches(rule.match)) return;
      const length = WINDOW_MS[rule.window];
      const windowStart = Math.floor(now / length) * length;
      const user = rule.per === "agent_user" ? token.user_id : null;
      hits.push({
        rule,
        usage: {
          bkey: hash(JSON.stringify([token.provider_id, from, rule.match, rule.per, rule.window, token.client_id, user])),
          window_start: windowStart,
          limit: rule.limit,
          provider_id: token.provider_id,
          client_id: token.client_id,
          user_id: user,
          rule: `${from}:${index} ${rule.match.join(", ")} · ${rule.limit}/${rule.window} per ${rule.per}`,
          expires_at: windowStart + length,
        },
      });
    });
  }
  return hits;
}

/**
 * Counts the call against one budget: the calls left after it, or — when the window's count is spent — null after
 * auditing `budget.exhausted` (the caller then denies or asks a person). `approved`: a person approved this exact
 * call, so it is counted past the limit.
 */
export async function countCall(gw: Gateway, hit: BudgetHit, token: TokenRecord, approved: boolean, callId?: string): Promise<number | null> {
  const used = await gw.store.countBudget(hit.usage, approved, callId);
  if (used !== null) return Math.max(0, hit.rule.limit - used);
  await audit(gw, "budget.exhausted", {
    client_id: token.client_id,
    agent_id: token.agent_id,
    provider_id: token.provider_id,
    user_id: token.user_id,
    data: { ...actOf(token), rule: hit.usage.rule, limit: hit.rule.limit, window: hit.rule.window, then: hit.rule.then, resets_at: new Date(hit.usage.expires_at).toISOString() },
  });
  return null;
}

/**
 * Counts the call against every matching budget, then has it approved when it needs to be: `approval`, the approval
 * rule that already applies (approval_rules or policy), or — past a budget with `then: "approve"` — that budget, whose
 * count is then taken once the person approved. A spent `deny` budget throws 429 before any approval is used; a
 * call that ends up not sent (refused, or waiting for a person) gives its counts back, so every count is a call sent.
 * Returns the calls left in the tightest budget, the approval rule the call was sent under (sent at most once), and
 * `unsent`: the door calls it when the relay did not send the call after all (a store or upstream fault before it left).
 */
export async function applyBudgets(
  gw: Gateway,
  hits: readonly BudgetHit[],
  token: TokenRecord,
  approval: ApprovalRule | null,
  approve: (rule: ApprovalRule) => Promise<void>,
): Promise<{ remaining: number; approval: ApprovalRule | null; unsent: () => void }> {
  // Each count is kept with the call's id (store/sql/budgets.ts): given back once, even when its answer was lost.
  const callId = crypto.randomUUID();
  /** Counts taken, or maybe taken (a count whose answer never came: giving it back is a no-op if it was not). */
  const counted: BudgetHit[] = [];
  const afterApproval: BudgetHit[] = [];
  let remaining = Infinity;
  const count = async (hit: BudgetHit, approved: boolean) => {
    try {
      return await countCall(gw, hit, token, approved, callId);
    } catch (err) {
      if (err instanceof StoreUnavailableError) counted.push(hit);
      throw err;
    }
  };
  try {
    for (const hit of hits) {
      const left = await count(hit, false);
      if (left !== null) {
        counted.push(hit);
        remaining = Math.min(remaining, left);
      } else if (hit.rule.then === "deny") throw budgetExhausted(gw, hit);
      else {
        // past the limit each call waits for a person; once approved it is sent (once) and counted
        approval ??= hit.rule;
        afterApproval.push(hit);
      }
    }
    if (approval) await approve(approval);
    for (const hit of afterApproval) {
      const left = await count(hit, true);
      if (left !== null) counted.push(hit);
      remaining = Math.min(remaining, left ?? 0);
    }
  } catch (err) {
    // held or refused (an approval asked, a budget spent): the store answers, so the answer reads the budget as it is
    // now; the store failing: the give-back is retried in the background and the 503 goes out at once
    const back = giveBack(gw, callId, counted);
    if (!(err instanceof StoreUnavailableError)) await back;
    throw err;
  }
  let given = false;
  return {
    remaining: remaining === Infinity ? 0 : remaining,
    approval,
    // the call was not sent after all (the relay failed before sending it): its counts go back, once
    unsent: () => (given ? Promise.resolve() : ((given = true), giveBack(gw, callId, counted))),
  };
}

/**
 * Gives back the counts of a call that was not sent: at once, and — when the store does not answer — again and again
 * (in the background, backing off to GIVE_BACK_MAX_MS) until it does or the budget's window is over: the row kept with
 * each count makes every attempt, from any instance, give it back at most once (DESIGN §24).
 */
export async function giveBack(gw: Gateway, callId: string, hits: readonly BudgetHit[]): Promise<void> {
  // resolves after the first attempt (a caller may wait for it); a store that does not answer leaves the rest to the
  // background
  await Promise.all(hits.map((hit) => giveBackOne(gw, callId, hit)));
}

async function giveBackOne(gw: Gateway, callId: string, hit: BudgetHit, wait = 0): Promise<void> {
  try {
    await gw.store.uncountCall(callId, hit.usage);
  } catch (err) {
    const next = Math.min(Math.max(wait * 2, 50), GIVE_BACK_MAX_MS);
    if (!(err instanceof StoreUnavailableError) || gw.now() + next >= hit.usage.expires_at) {
      gw.log.error(`a budget count of a call that was not sent could not be given back (${hit.usage.rule})`, err);
      return;
    }
    void Bun.sleep(next).then(() => giveBackOne(gw, callId, hit, next));
  }
}

const GIVE_BACK_MAX_MS = 2_000;

/** 429 BUDGET_EXHAUSTED, Retry-After until the window's end. */
export function budgetExhausted(gw: Gateway, hit: BudgetHit): AthError {
  if (hit.delegated) {
    // a share never resets: no Retry-After — the sub-agent asks its parent for a new delegation
    return new AthError("BUDGET_EXHAUSTED", `This delegated token has made the ${hit.rule.limit} calls its parent gave it`, { limit: hit.rule.limit, reason: "delegated_budget" });
  }
  const resetsAt = new Date(hit.usage.expires_at).toISOString();
  return new AthError(
    "BUDGET_EXHAUSTED",
    `This agent has made its ${hit.rule.limit} calls allowed per ${hit.rule.window} for ${hit.rule.match.join(", ")}; the budget resets at ${resetsAt}`,
    { limit: hit.rule.limit, window: hit.rule.window, resets_at: resetsAt },
    { headers: { "retry-after": String(Math.max(1, Math.ceil((hit.usage.expires_at - gw.now()) / 1000))) } },
  );
}

// internal

/**
 * A budget row's key: the provider, where the rule is written, the rule's identity across restarts and reorderings
 * (match, subject kind and window — not its limit, which may be raised mid-window) and the subject.
 */
function hash(text: string): string {
  const h = new Bun.CryptoHasher("sha256");
  h.update(text);
  return h.digest("base64url");
}
