/**
 * Budgets (src/gateway/domain/budgets.ts, DESIGN §16) against the real store in process: which budgets count a call
 * (provider's then agent's, per agent or per agent and user, epoch-aligned windows), exact counting, `deny` refusing
 * with the window's end, `approve` holding each further call for a person, and counts given back for a call not sent.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { applyBudgets, budgetsMatching, countCall, WINDOW_MS } from "../../../../src/gateway/domain/budgets.ts";
import { ProviderConfig, type ApprovalRule, type ProviderConfigInput } from "../../../../src/protocol/index.ts";
import type { AgentRecord, TokenRecord } from "../../../../src/store/types.ts";
import { inProcessGateway, type InProcess } from "../../../helpers/in-process.ts";

let g: InProcess;
beforeEach(async () => {
  g = await inProcessGateway();
});
afterEach(() => g.close());

const config = (budgets: unknown) =>
  ProviderConfig.parse({
    display_name: "Mail", available_scopes: ["send"], authorize_endpoint: "https://p.example/a", token_endpoint: "https://p.example/t",
    client_id: "c", client_secret: "s", budgets: budgets as ProviderConfigInput["budgets"],
  });
const token = (user = "alice") => ({ client_id: "ath_client", agent_id: "did:key:zAgent", user_id: user, provider_id: "mail", scopes: ["send"] }) as TokenRecord;
const always = () => true;
const never = () => false;
const noAgent = null as AgentRecord | null;

describe("which budgets count a call", () => {
  test("the provider's then the agent's whose match holds, each with its epoch-aligned window", () => {
    const c = config([{ match: ["POST /send"], per: "agent", limit: 5, window: "1h" }]);
    const agent = { budgets: [{ match: ["POST /send"], per: "agent_user", limit: 2, window: "1d", then: "deny", approver: "user" }] } as unknown as AgentRecord;
    const now = Date.parse("2026-11-28T13:37:00Z");
    const hits = budgetsMatching(c, agent, always, token(), now);
    expect(hits.map((h) => [h.rule.limit, h.usage.window_start, h.usage.expires_at, h.usage.user_id])).toEqual([
      [5, Date.parse("2026-11-28T13:00:00Z"), Date.parse("2026-11-28T14:00:00Z"), null],
      [2, Date.parse("2026-11-28T00:00:00Z"), Date.parse("2026-11-29T00:00:00Z"), "alice"],
    ]);
    expect(budgetsMatching(c, agent, never, token(), now)).toEqual([]);
  });

  test("per agent_user: each person has a row of their own; per agent: one row for all; a raised limit keeps the row", () => {
    const key = (budgets: unknown, user: string) => budgetsMatching(config(budgets), noAgent, always, token(user), 0)[0]!.usage.bkey;
    const perUser = [{ match: ["POST /send"], per: "agent_user", limit: 5, window: "1h" }];
    const perAgent = [{ match: ["POST /send"], per: "agent", limit: 5, window: "1h" }];
    expect(key(perUser, "alice")).not.toBe(key(perUser, "bob"));
    expect(key(perAgent, "alice")).toBe(key(perAgent, "bob"));
    expect(key([{ ...perAgent[0], limit: 50 }], "alice")).toBe(key(perAgent, "alice"));
    expect(WINDOW_MS["30d"]).toBe(30 * 86_400_000);
  });
});

describe("counting", () => {
  test("exactly the limit, then null; `budget.exhausted` audited once per refusal", async () => {
    const [hit] = budgetsMatching(config([{ match: ["POST /send"], per: "agent", limit: 3, window: "1h" }]), noAgent, always, token(), g.gw.now());
    const left = [];
    for (let i = 0; i < 5; i++) left.push(await countCall(g.gw, hit!, token(), false));
    expect(left).toEqual([2, 1, 0, null, null]);
    await g.gw.auditLog.flush();
    expect((await g.gw.store.listAudit({ type: "budget.exhausted" })).length).toBe(2);
  });

  test("a call the relay did not send gives its counts back, once however often `unsent` is called (DESIGN §24)", async () => {
    const hits = budgetsMatching(config([{ match: ["POST /send"], per: "agent", limit: 2, window: "1h", then: "deny" }]), noAgent, always, token(), g.gw.now());
    const approve = async () => undefined;
    const first = await applyBudgets(g.gw, hits, token(), null, approve);
    const second = await applyBudgets(g.gw, hits, token(), null, approve);
    expect([first.remaining, second.remaining]).toEqual([1, 0]);
    first.unsent();
    first.unsent();
    for (let i = 0; i < 50 && (await usedOf(hits[0]!)) !== 1; i++) await Bun.sleep(10);
    expect(await usedOf(hits[0]!)).toBe(1);
    // the count given back is the other call's to take; the call that was sent keeps its own
    expect((await applyBudgets(g.gw, hits, token(), null, approve)).remaining).toBe(0);
    expect(await g.gw.store.uncountCall("never-counted", hits[0]!.usage)).toBe(false);
  });

  test("`deny` past the limit: 429 BUDGET_EXHAUSTED with Retry-After to the window's end, and nothing counted", async () => {
    const hits = budgetsMatching(config([{ match: ["POST /send"], per: "agent", limit: 1, window: "1h", then: "deny" }]), noAgent, always, token(), g.gw.now());
    const approve = async () => undefined;
    expect(await applyBudgets(g.gw, hits, token(), null, approve)).toMatchObject({ remaining: 0, approval: null });
    const err = await applyBudgets(g.gw, hits, token(), null, approve).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: "BUDGET_EXHAUSTED", status: 429, details: { limit: 1, window: "1h" } });
    const retryAfter = Number((err as { headers: Record<string, string> }).headers["retry-after"]);
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(3600);
  });

  test("`approve` past the limit: the call waits for a person and, approved, is counted past the limit", async () => {
    const hits = budgetsMatching(config([{ match: ["POST /send"], per: "agent", limit: 1, window: "1h", then: "approve", approver: "admin" }]), noAgent, always, token(), g.gw.now());
    await applyBudgets(g.gw, hits, token(), null, async () => undefined);
    const asked: ApprovalRule[] = [];
    const r = await applyBudgets(g.gw, hits, token(), null, async (rule) => void asked.push(rule));
    expect(asked.map((a) => a.approver)).toEqual(["admin"]);
    expect(r.approval).not.toBeNull();
    const used = await g.gw.store.listBudgetUsage({ now: g.gw.now() });
    expect(used.map((u) => u.used)).toEqual([2]);
  });

  test("a call not sent (its approval refused) gives its counts back: every count is a call sent", async () => {
    const hits = budgetsMatching(config([{ match: ["POST /send"], per: "agent", limit: 5, window: "1h" }]), noAgent, always, token(), g.gw.now());
    const refused = new Error("not approved yet");
    const rule = { match: ["POST /send"], approver: "user", ttl: 300 } as ApprovalRule;
    await expect(applyBudgets(g.gw, hits, token(), rule, async () => Promise.reject(refused))).rejects.toBe(refused);
    expect(await countCall(g.gw, hits[0]!, token(), false)).toBe(4);
  });
});

async function usedOf(hit: { usage: { bkey: string; client_id: string } }): Promise<number | undefined> {
  const rows = await g.gw.store.listBudgetUsage({ now: g.gw.now(), client_id: hit.usage.client_id });
  return rows.find((r) => r.bkey === hit.usage.bkey)?.used;
}
