/**
 * Wrong secrets per client IP (DESIGN §14 "Secrets an operator chooses are strong"): after `limit` wrong ones in a
 * fixed window, that IP gets 429 RATE_LIMITED (`Retry-After`) for the rest of the window, whatever it sends — the
 * right secret included, so guessing stops paying off. Other IPs are not affected. In this process's memory (bounded:
 * past `maxClients` the oldest entries are dropped); a gateway has one per guarded secret (the admin API's token).
 */
import { AthError } from "../../protocol/index.ts";

export interface WrongSecretRate {
  /** Wrong secrets allowed per window; the next request of that IP in the window is refused. */
  limit: number;
  windowMs: number;
}

/** DESIGN §14: 10 wrong admin tokens in a fixed 60 s window. */
export const WRONG_ADMIN_TOKENS: WrongSecretRate = { limit: 10, windowMs: 60_000 };

export class WrongSecrets {
  private readonly seen = new Map<string, { start: number; wrong: number }>();
  constructor(
    private readonly rate: WrongSecretRate,
    private readonly what: string,
    private readonly maxClients = 10_000,
  ) {}

  /** Throws 429 when `ip` has spent its wrong guesses in the current window. */
  check(ip: string, now: number): void {
    const e = this.seen.get(ip);
    const start = now - (now % this.rate.windowMs);
    if (e === undefined || e.start !== start || e.wrong < this.rate.limit) return;
    const retry = Math.max(1, Math.ceil((start + this.rate.windowMs - now) / 1000));
    throw new AthError("RATE_LIMITED", `Too many wrong ${this.what}s from this address: wait ${retry} s`, { retry_after: retry }, {
      headers: { "retry-after": String(retry) },
    });
  }

  /** Counts one wrong secret from `ip`. */
  wrong(ip: string, now: number): void {
    const start = now - (now % this.rate.windowMs);
    const e = this.seen.get(ip);
    const next = e !== undefined && e.start === start ? { start, wrong: e.wrong + 1 } : { start, wrong: 1 };
    this.seen.delete(ip);
    this.seen.set(ip, next);
    if (this.seen.size > this.maxClients) this.seen.delete(this.seen.keys().next().value!);
  }
}
