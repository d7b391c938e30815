/**
 * The admin API for tokens (DESIGN §9): list them by agent, client, user, provider and state, newest first in keyset
 * pages; revoke every live token matching the given fields (ANDed) exactly as `/ath/revoke` does — upstream grants
 * dropped and revoked at the provider. Tokens are named by their public `token_id`; the secret never comes back.
 */
import { z } from "zod";
import type { AdminToken } from "../../protocol/admin.ts";
import { AthError } from "../../protocol/index.ts";
import type { TokenFilter, TokenRecord, TokenState } from "../../store/types.ts";
import type { Call } from "../context.ts";
import { revokeTokens } from "../domain/tokens.ts";
import { readJson } from "../http/request.ts";
import { json } from "../http/response.ts";
import { decodeCursor, encodeCursor, iso, readLimit, readQuery } from "./query.ts";

const FILTERS = ["token_id", "client_id", "agent_id", "user_id", "provider_id"] as const;
const STATES = ["active", "revoked", "expired"] as const;

export async function list({ gw, search }: Call): Promise<Response> {
  return json(await listTokens(gw, search));
}

/** The `GET /ath/admin/tokens` answer for a query string (the console reads it too). */
export async function listTokens(gw: Call["gw"], search: string) {
  const q = readQuery(search, [...FILTERS, "state"]);
  const state = q.get("state");
  if (state !== undefined && !(STATES as readonly string[]).includes(state)) {
    throw new AthError("INVALID_REQUEST", `state must be one of ${STATES.join(", ")}`, { field: "state" });
  }
  const limit = readLimit(q);
  const after = decodeCursor(q.get("cursor"), isTokenKey);
  const filter: TokenFilter = Object.fromEntries(FILTERS.filter((f) => q.has(f)).map((f) => [f, q.get(f)!]));
  const rows = await gw.store.listTokens(filter, {
    now: gw.now(),
    limit: limit + 1,
    ...(state ? { state: state as TokenState } : {}),
    ...(after ? { after: { created_at: after.c, token_id: after.i } } : {}),
  });
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  return {
    tokens: page.map(view),
    next_cursor: rows.length > limit && last ? encodeCursor({ c: last.created_at, i: last.token_id }) : null,
  };
}

const RevokeSelector = z
  .object({
    token_id: z.string().min(1).max(200).optional(),
    client_id: z.string().min(1).max(200).optional(),
    agent_id: z.string().min(1).max(2048).optional(),
    user_id: z.string().min(1).max(2048).optional(),
    provider_id: z.string().min(1).max(200).optional(),
  })
  .strict()
  .refine((s) => Object.keys(s).length > 0, { message: `give at least one of ${FILTERS.join(", ")}` });

export async function revoke(call: Call): Promise<Response> {
  const selector = await readJson(call, RevokeSelector);
  const revoked = await revokeTokens(call.gw, selector, "admin");
  return json({ revoked: revoked.length });
}

/** The wire view of a token: its public id, never its hash or secret. */
export function view(t: TokenRecord): AdminToken {
  return {
    token_id: t.token_id,
    client_id: t.client_id,
    agent_id: t.agent_id,
    user_id: t.user_id,
    provider_id: t.provider_id,
    scopes: t.scopes,
    created_at: iso(t.created_at)!,
    expires_at: iso(t.expires_at)!,
    revoked_at: iso(t.revoked_at),
    // never an ancestor's hash: its public id, agent and client only
    ...(t.delegation
      ? { delegation: { chain: t.delegation.chain.map(({ token_id, agent_id, client_id }) => ({ token_id, agent_id, client_id })), budget: t.delegation.budget } }
      : {}),
  };
}

// internal

function isTokenKey(v: unknown): v is { c: number; i: string } {
  const o = v as { c?: unknown; i?: unknown } | null;
  return typeof o === "object" && o !== null && Number.isSafeInteger(o.c) && typeof o.i === "string" && o.i.length <= 200 && Object.keys(o).length === 2;
}
