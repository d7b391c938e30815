/** `ath admin budgets` (DESIGN §16): usage per agent (and user), budget and window. */
import { listBudgets } from "../../../agent/flows/admin.ts";
import type { Invocation } from "../../kit/flags.ts";
import { defined, setup, table, text } from "./common.ts";

export async function budgets({ args: a, format }: Invocation): Promise<void> {
  const c = await setup(a, format);
  const answer = await listBudgets(c.target, defined({ client_id: text(a["client-id"]), provider_id: text(a.provider) }));
  if (c.out.json) return c.out.doc(answer);
  const rows = answer.budgets.map((b) => [b.client_id, b.user_id ?? "-", b.provider_id, `${b.used}/${b.limit}`, b.resets_at, b.rule]);
  table(c.out, ["CLIENT_ID", "USER", "PROVIDER", "USED", "RESETS", "RULE"], rows);
}
