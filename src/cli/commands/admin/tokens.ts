/** `ath admin tokens list|revoke`. */
import { checkRevokeSelector, listTokens, revokeTokens } from "../../../agent/flows/admin.ts";
import type { Invocation } from "../../kit/flags.ts";
import { defined, filters, more, page, setup, table, text, type Args } from "./common.ts";

export async function tokensList({ args: a, format }: Invocation): Promise<void> {
  const c = await setup(a, format);
  const answer = await listTokens(c.target, defined({ ...filters(a), state: text(a.state), ...page(a) }));
  if (c.out.json) return c.out.doc(answer);
  const now = c.deps.now();
  const rows = answer.tokens.map((t) => [
    t.token_id,
    t.revoked_at !== null ? "revoked" : Date.parse(t.expires_at) <= now ? "expired" : "active",
    t.client_id, t.user_id, t.provider_id, t.scopes.join(","), t.created_at, t.expires_at,
    // DESIGN §23: who delegated it — the ancestors' clients, nearest first
    t.delegation ? t.delegation.chain.map((l) => l.client_id).join("<") : "-",
  ]);
  table(c.out, ["TOKEN_ID", "STATE", "CLIENT_ID", "USER", "PROVIDER", "SCOPES", "CREATED", "EXPIRES", "DELEGATED_BY"], rows);
  more(c.out, answer.next_cursor);
}

export async function tokensRevoke({ args: a, format }: Invocation): Promise<void> {
  // the selector is checked before the session: a command missing it needs no gateway to say so
  const selector = checkRevokeSelector(defined({ token_id: text(a.token_id), ...filters(a) }));
  const c = await setup(a, format);
  const answer = await revokeTokens(c.target, selector);
  if (c.out.json) return c.out.doc(answer);
  c.out.line(`revoked ${answer.revoked} token(s)`);
}
