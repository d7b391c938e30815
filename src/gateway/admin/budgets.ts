/** The admin API: budget usage (DESIGN §16) — GET /ath/admin/budgets[?client_id=&provider_id=], the windows not yet ended. */
import type { Call, Gateway } from "../context.ts";
import { json } from "../http/response.ts";
import { iso, readQuery } from "./query.ts";

export async function list({ gw, search }: Call): Promise<Response> {
  return json(await listBudgets(gw, search));
}

/** Usage per agent (and user), budget and window, newest windows of each budget only as they are counted. */
export async function listBudgets(gw: Gateway, search: string) {
  const q = readQuery(search, ["client_id", "provider_id"]);
  const clientId = q.get("client_id");
  const providerId = q.get("provider_id");
  const rows = await gw.store.listBudgetUsage({ now: gw.now(), ...(clientId ? { client_id: clientId } : {}), ...(providerId ? { provider_id: providerId } : {}) });
  return {
    budgets: rows.map((u) => ({
      provider_id: u.provider_id,
      client_id: u.client_id,
      user_id: u.user_id,
      rule: u.rule,
      used: u.used,
      limit: u.limit,
      remaining: Math.max(0, u.limit - u.used),
      window_start: iso(u.window_start),
      resets_at: iso(u.expires_at),
    })),
  };
}
