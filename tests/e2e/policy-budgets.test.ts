/**
 * Budgets (DESIGN §16) across instances: two `ath serve` processes on one PostgreSQL database; a concurrent loop of
 * calls split over both, past the limit, forwards exactly the limit (the upstream's log counts them); the rest get
 * 429 BUDGET_EXHAUSTED with Retry-After and details; counted answers carry ATH-Budget-Remaining; usage at
 * GET /ath/admin/budgets; audit `budget.exhausted` and the metric; `then: "approve"`: past the limit each call waits
 * for a person and is counted once approved.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { fullFlow } from "../helpers/agent.ts";
import { ensureBinary } from "../helpers/cli-binary.ts";
import { startPostgresPair, type PostgresPair } from "../helpers/postgres-pair.ts";

const LIMIT = 100;
const CALLS = 600;
const CONCURRENCY = 24;

let pair: PostgresPair;
let token: string;
let clientId: string;

beforeAll(async () => {
  pair = await startPostgresPair({
    mail: {
      budgets: [
        { match: ["GET /v1/echo"], per: "agent", limit: LIMIT, window: "1h", then: "deny" },
        { match: ["POST /v1/echo"], per: "agent_user", limit: 1, window: "1d", then: "approve", approver: "admin" },
        { match: ["POST /v1/**"], per: "agent", limit: 50, window: "30d", then: "deny" },
      ],
    },
  });
  const flow = await fullFlow(pair.a.baseUrl, { provider_id: "mail", scopes: ["openid", "mail:read", "mail:send"] });
  token = flow.accessToken;
  clientId = flow.client.client_id;
}, 60_000);
afterAll(() => pair?.stop());

const admin = () => ({ "x-ath-user-token": pair.a.adminToken, "content-type": "application/json" });

describe("budgets across two instances on one PostgreSQL", () => {
  test(`${CALLS} concurrent calls over A and B with limit ${LIMIT}: exactly ${LIMIT} forwarded, the rest 429 BUDGET_EXHAUSTED`, async () => {
    const echoes = () => pair.api.requests.filter((r) => r.method === "GET" && r.path === "/v1/echo").length;
    const before = echoes();
    const statuses: number[] = [];
    const remaining: number[] = [];
    let refused: Response | undefined;
    let next = 0;
    const worker = async () => {
      while (next < CALLS) {
        const i = next++;
        const g = i % 2 === 0 ? pair.a : pair.b;
        const res = await fetch(`${g.baseUrl}/ath/proxy/mail/v1/echo`, { headers: { authorization: `Bearer ${token}` } });
        statuses.push(res.status);
        const left = res.headers.get("ath-budget-remaining");
        if (res.status === 200) remaining.push(Number(left));
        if (res.status === 429 && refused === undefined) refused = res;
        else await res.body?.cancel();
      }
    };
    const started = performance.now();
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    console.info(`[budgets] ${CALLS} calls over 2 instances in ${(performance.now() - started).toFixed(0)} ms: ${statuses.filter((s) => s === 200).length} × 200, ${statuses.filter((s) => s === 429).length} × 429`);
    expect(echoes() - before).toBe(LIMIT);
    expect(statuses.filter((s) => s === 200)).toHaveLength(LIMIT);
    expect(statuses.filter((s) => s === 429)).toHaveLength(CALLS - LIMIT);
    // each counted call saw a distinct count: remaining LIMIT-1 … 0, each once
    expect(remaining.sort((x, y) => x - y)).toEqual(Array.from({ length: LIMIT }, (_, i) => i));
    const doc = (await refused!.json()) as { code: string; details: { limit: number; window: string; resets_at: string } };
    expect(refused!.headers.get("x-ath-error")).toBe("BUDGET_EXHAUSTED");
    expect(doc.code).toBe("BUDGET_EXHAUSTED");
    expect(doc.details.limit).toBe(LIMIT);
    expect(doc.details.window).toBe("1h");
    const resetsIn = Date.parse(doc.details.resets_at) - Date.now();
    expect(resetsIn).toBeGreaterThan(0);
    expect(resetsIn).toBeLessThanOrEqual(3_600_000);
    const retryAfter = Number(refused!.headers.get("retry-after"));
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(3600);

    // usage, audit and metric
    const usage = (await (await fetch(`${pair.b.baseUrl}/ath/admin/budgets?client_id=${clientId}`, { headers: { "x-ath-user-token": pair.b.adminToken } })).json()) as {
      budgets: { used: number; limit: number; remaining: number; rule: string; user_id: string | null }[];
    };
    expect(usage.budgets.find((u) => u.rule.includes("GET /v1/echo"))).toMatchObject({ used: LIMIT, limit: LIMIT, remaining: 0, user_id: null });
    const audit = (await (await fetch(`${pair.a.baseUrl}/ath/admin/audit?type=budget.exhausted&limit=500`, { headers: admin() })).json()) as { events: unknown[] };
    expect(audit.events.length).toBeGreaterThan(0);
    let exhausted = 0;
    for (const g of [pair.a, pair.b]) {
      const text = await (await fetch(`${g.baseUrl}/metrics`, { headers: { authorization: `Bearer ${g.adminToken}` } })).text();
      exhausted += Number(/ath_budget_exhausted_total\{provider="mail"\} (\d+)/.exec(text)?.[1] ?? 0);
    }
    expect(exhausted).toBe(CALLS - LIMIT);
  }, 120_000);

  test('then: "approve" — past the limit a call waits for a person; approved, it is sent once and counted', async () => {
    const posts = () => pair.api.requests.filter((r) => r.method === "POST" && r.path === "/v1/echo").length;
    const before = posts();
    const send = (g = pair.a, approval?: string) =>
      fetch(`${g.baseUrl}/ath/proxy/mail/v1/echo`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json", ...(approval ? { "x-ath-approval": approval } : {}) },
        body: '{"n":1}',
      });
    const first = await send();
    expect(first.status).toBe(200);
    expect(first.headers.get("ath-budget-remaining")).toBe("0");
    const held = await send(pair.b);
    expect(held.status).toBe(403);
    const { details } = (await held.json()) as { details: { approval_id: string; approver: string } };
    expect(details.approver).toBe("admin");
    expect(posts() - before).toBe(1);
    // the held call was not sent, so it counts against no budget: the other matching budget gave its count back
    const usage = async () =>
      ((await (await fetch(`${pair.a.baseUrl}/ath/admin/budgets?client_id=${clientId}`, { headers: admin() })).json()) as { budgets: { used: number; rule: string; user_id: string | null }[] }).budgets;
    expect((await usage()).find((u) => u.rule.includes("POST /v1/**"))!.used).toBe(1);
    const decided = await fetch(`${pair.a.baseUrl}/ath/admin/approvals/${details.approval_id}`, { method: "POST", headers: admin(), body: JSON.stringify({ decision: "approve" }) });
    expect(decided.status).toBe(200);
    const sent = await send(pair.b, details.approval_id);
    expect(sent.status).toBe(200);
    expect(posts() - before).toBe(2);
    const after = await usage();
    const row = after.find((u) => u.rule.includes("POST /v1/echo"))!;
    expect(row.used).toBe(2);
    expect(row.user_id).toBeString();
    expect(after.find((u) => u.rule.includes("POST /v1/**"))!.used).toBe(2);
    expect(sent.headers.get("ath-budget-remaining")).toBe("0");
  }, 60_000);

  test("`ath admin budgets` (the compiled CLI) lists the usage", async () => {
    const env = { PATH: process.env.PATH ?? "", HOME: "/tmp", ATH_HOME: `/tmp/ath-budgets-cli-${process.pid}`, NO_COLOR: "1", ATH_ADMIN_TOKEN: pair.a.adminToken };
    const json = Bun.spawnSync([ensureBinary(), "admin", "budgets", "-g", pair.a.baseUrl, "--client-id", clientId, "--format", "json"], { env });
    expect(json.exitCode).toBe(0);
    const doc = JSON.parse(json.stdout.toString()) as { budgets: { used: number; limit: number }[] };
    expect(doc.budgets.map((b) => [b.used, b.limit]).sort()).toEqual([[100, 100], [2, 1], [2, 50]].sort());
    const text = Bun.spawnSync([ensureBinary(), "admin", "budgets", "-g", pair.a.baseUrl], { env });
    expect(text.exitCode).toBe(0);
    expect(text.stdout.toString()).toContain(`100/100`);
    expect(text.stdout.toString()).toContain("GET /v1/echo");
  });
});
