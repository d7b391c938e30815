/**
 * The admin API's list queries (DESIGN §9): known parameters only (a misspelt filter is a 400, not a silently
 * unfiltered list), an empty value counts as absent (the console's forms send every field), `limit` 1–500 (default
 * 100), times as ISO 8601, and the opaque keyset `cursor` — base64url JSON of the last row's sort key, which a bad or
 * foreign value fails to decode into (400).
 */
import { AthError } from "../../protocol/index.ts";

export const PAGE_LIMIT = { default: 100, max: 500 } as const;

/** The query's parameters, each at most once, each one of `known` (plus `limit` and `cursor`); empty ones dropped. */
export function readQuery(search: string, known: readonly string[]): Map<string, string> {
  const out = new Map<string, string>();
  const allowed = new Set([...known, "limit", "cursor"]);
  for (const [key, value] of new URLSearchParams(search)) {
    if (!allowed.has(key)) throw new AthError("INVALID_REQUEST", `Unknown query parameter '${key}' (known: ${[...allowed].join(", ")})`, { field: key });
    if (out.has(key)) throw new AthError("INVALID_REQUEST", `Query parameter '${key}' is given twice`, { field: key });
    if (value.includes("\0")) throw new AthError("INVALID_REQUEST", `Query parameter '${key}' must not contain U+0000`, { field: key });
    if (value !== "") out.set(key, value);
  }
  return out;
}

export function readLimit(q: Map<string, string>): number {
  const raw = q.get("limit");
  if (raw === undefined) return PAGE_LIMIT.default;
  const n = /^\d{1,4}$/.test(raw) ? Number(raw) : NaN;
  if (!(n >= 1 && n <= PAGE_LIMIT.max)) throw new AthError("INVALID_REQUEST", `limit must be an integer from 1 to ${PAGE_LIMIT.max}`, { field: "limit" });
  return n;
}

/** An ISO 8601 date-time (with a zone, or UTC when none), as epoch ms. */
export function readTime(q: Map<string, string>, field: string): number | undefined {
  const raw = q.get(field);
  if (raw === undefined) return undefined;
  const ms = /^\d{4}-\d{2}-\d{2}(T[\d:.]+(Z|[+-]\d{2}:?\d{2})?)?$/.test(raw) ? Date.parse(raw) : NaN;
  if (Number.isNaN(ms)) throw new AthError("INVALID_REQUEST", `${field} must be an ISO 8601 date-time, e.g. 2026-01-31T12:00:00Z`, { field });
  return ms;
}

export function encodeCursor(key: Record<string, string | number>): string {
  return Buffer.from(JSON.stringify(key)).toString("base64url");
}

/** The cursor's key, checked by `valid`; anything else is 400 INVALID_REQUEST. */
export function decodeCursor<T>(raw: string | undefined, valid: (v: unknown) => v is T): T | undefined {
  if (raw === undefined) return undefined;
  let value: unknown;
  try {
    value = /^[A-Za-z0-9_-]{1,400}$/.test(raw) ? JSON.parse(Buffer.from(raw, "base64url").toString("utf8")) : undefined;
  } catch {
    value = undefined;
  }
  if (!valid(value)) throw new AthError("INVALID_REQUEST", "cursor is not one this gateway gave out", { field: "cursor" });
  return value;
}

export function iso(ms: number | null): string | null {
  return ms === null ? null : new Date(ms).toISOString();
}
