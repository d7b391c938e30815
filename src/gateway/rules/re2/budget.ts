/**
 * The matcher's budget (issue 35, finding 5): steps one evaluation of a condition may spend on `matches`, every call
 * together — a condition calling `matches` in a comprehension over many strings spends one budget, not one per call.
 * A cached DFA transition costs 1; visiting an instruction while building a state, and the state itself, cost more
 * (measured with scripts/bench/re2.ts so that spending the whole budget takes tens of milliseconds, not seconds).
 * Evaluation is synchronous, so one counter for the process is the running evaluation's own.
 */

export class Re2WorkError extends Error {
  override readonly name = "Re2WorkError";
}

export const MAX_WORK = 2_000_000;
/** What a step costs, in units of one cached transition. */
export const VISIT_COST = 2;
export const STATE_COST = 24;

/** Runs `fn` with a fresh budget of MAX_WORK steps shared by every match it makes. */
export function withMatchBudget<T>(fn: () => T): T {
  const [savedLeft, savedActive] = [left, active];
  left = MAX_WORK;
  active = true;
  try {
    return fn();
  } finally {
    left = savedLeft;
    active = savedActive;
  }
}

/** Whether a budget is running (outside one, each match gets a budget of its own). */
export function inBudget(): boolean {
  return active;
}

/** Spends `n` steps; throws Re2WorkError once the budget is gone. */
export function spend(n: number): void {
  left -= n;
  if (left < 0) throw new Re2WorkError(`matching needs more than ${MAX_WORK} steps on this input`);
}

// internal

let left = 0;
let active = false;
