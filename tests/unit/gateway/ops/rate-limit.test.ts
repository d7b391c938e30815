/**
 * Rate limits of DESIGN §10 in process (a test clock moves the windows): the request that crosses a limit gets 429
 * RATE_LIMITED with Retry-After and RateLimit-*; the window resets; `0` turns a limit off; registrations count per
 * client IP (the last X-Forwarded-For hop under --trust-proxy), authorize and token share one budget per client_id,
 * the proxy budget counts per client_id. Two gateways on one PostgreSQL schema share each limit.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { authorize, call, fullFlow, register } from "../../../helpers/agent.ts";
import { makeAgent } from "../../../helpers/attestations.ts";
import { expectError } from "../../../helpers/expect-error.ts";
import { asError, BASE, inProcessGateway, scriptedGateway, type InProcess } from "../../../helpers/in-process.ts";
import type { ScriptedProvider } from "../../../helpers/scripted-provider.ts";
import { OptionsError, resolveServeOptions } from "../../../../src/gateway/options.ts";
import { parseRate } from "../../../../src/gateway/ops/rate-limit.ts";
import { PG_URL, postgresHarness, type Harness } from "../../../helpers/store-harness.ts";

let g: InProcess;
afterEach(() => g.close());

const MINUTE = { limit: 3, windowMs: 60_000 };

/** Moves the test clock to the start of the next window of `windowMs`. */
function nextWindow(gw: InProcess, windowMs: number) {
  gw.clock.ms += windowMs - (gw.clock.ms % windowMs);
}

async function expect429(res: Response, limit: string, max: number) {
  const { headers } = res;
  expectError(await asError(res), "RATE_LIMITED", { limit });
  const retryAfter = Number(headers.get("retry-after"));
  expect(retryAfter).toBeGreaterThanOrEqual(1);
  expect({
    limit: headers.get("ratelimit-limit"),
    remaining: headers.get("ratelimit-remaining"),
    reset: headers.get("ratelimit-reset"),
  }).toEqual({ limit: String(max), remaining: "0", reset: String(retryAfter) });
  return retryAfter;
}

describe("--rate-limit-register: per client IP", () => {
  test("the request that crosses the limit gets 429 with Retry-After and RateLimit-*; other IPs are not charged; the window resets", async () => {
    g = await inProcessGateway({ rateLimits: { register: MINUTE }, trustProxy: true });
    const from = (ip: string) => ({ fetch: (req: Request) => (req.headers.set("x-forwarded-for", `203.0.113.7, ${ip}`), g.fetch(req)), baseUrl: BASE });
    const reg = async (ip: string) => register(from(ip), await makeAgent(), { providers: [{ provider_id: "demo", scopes: ["notes:read"] }] });
    nextWindow(g, 60_000);
    g.clock.advance(15);
    for (let i = 0; i < 3; i++) expect((await reg("198.51.100.1")).status).toBe(201);
    const refused = await g.fetch(new Request(`${BASE}/ath/agents/register`, { method: "POST", headers: { "x-forwarded-for": "198.51.100.1", "content-type": "application/json" }, body: "{}" }));
    expect(await expect429(refused, "register", 3)).toBe(45);
    // the first X-Forwarded-For hops are the client's to write: only the last one (our proxy's) counts
    expect((await reg("198.51.100.2")).status).toBe(201);
    nextWindow(g, 60_000);
    expect((await reg("198.51.100.1")).status).toBe(201);
  });
});

describe("--rate-limit-auth: authorize and token share one budget per client_id", () => {
  test("a full flow spends 2 (authorize, token); the next authorize of that client is 429, another client's is not", async () => {
    let p: ScriptedProvider;
    ({ g, p } = await scriptedGateway((p) => ({ mail: p.config({ available_scopes: ["mail:read"] }) }), { rateLimits: { auth: { limit: 2, windowMs: 60_000 } } }));
    void p;
    nextWindow(g, 60_000);
    const flow = await fullFlow(g, { provider_id: "mail", scopes: ["mail:read"] });
    const again = await authorize(g, flow.agent, flow.client, { provider_id: "mail", scopes: ["mail:read"] });
    expect(again.status).toBe(429);
    expect(again.json).toMatchObject({ code: "RATE_LIMITED", details: { limit: "auth" } });
    expect(again.headers.get("ratelimit-limit")).toBe("2");
    const other = await fullFlow(g, { provider_id: "mail", scopes: ["mail:read"] });
    expect(other.accessToken).toStartWith("ath_tk_");
    nextWindow(g, 60_000);
    expect((await authorize(g, flow.agent, flow.client, { provider_id: "mail", scopes: ["mail:read"] })).status).toBe(200);
  });
});

describe("--rate-limit-proxy: per client_id", () => {
  test("the 4th call in a second is 429 and never reaches the upstream; the next second admits again", async () => {
    let p: ScriptedProvider;
    ({ g, p } = await scriptedGateway((p) => ({ mail: p.config({ available_scopes: ["mail:read"] }) }), { rateLimits: { proxy: { limit: 3, windowMs: 1000 } } }));
    const flow = await fullFlow(g, { provider_id: "mail", scopes: ["mail:read"] });
    nextWindow(g, 1000);
    const get = () => call(`${BASE}/ath/proxy/mail/v1/messages`, { headers: { authorization: `Bearer ${flow.accessToken}` }, fetch: g.fetch });
    for (let i = 0; i < 3; i++) expect((await get()).status).toBe(200);
    const before = p.api.length;
    const refused = await g.fetch(new Request(`${BASE}/ath/proxy/mail/v1/messages`, { headers: { authorization: `Bearer ${flow.accessToken}` } }));
    expect(await expect429(refused, "proxy", 3)).toBe(1);
    expect(refused.headers.get("x-ath-error")).toBe("RATE_LIMITED");
    expect(p.api.length).toBe(before);
    g.clock.advance(1);
    expect((await get()).status).toBe(200);
  });
});

describe("0 turns a limit off", () => {
  test("flags: N/s|m|h or 0; anything else names the flag", () => {
    expect(parseRate("0")).toBeNull();
    expect(parseRate("20/m")).toEqual({ limit: 20, windowMs: 60_000 });
    const o = resolveServeOptions({ "rate-limit-register": "0", "rate-limit-proxy": "5/s" }, { ATH_RATE_LIMIT_AUTH: "0", ATH_HOME: "/tmp/x" });
    expect(o.rateLimits).toEqual({ proxy: { limit: 5, windowMs: 1000 } });
    expect(resolveServeOptions({}, { ATH_HOME: "/tmp/x" }).rateLimits).toEqual({
      register: { limit: 20, windowMs: 60_000 },
      auth: { limit: 60, windowMs: 60_000 },
      proxy: { limit: 100, windowMs: 1000 },
    });
    for (const bad of ["20", "20/d", "-1/s", "1.5/m", "0/s", "ten/m", ""]) {
      if (bad === "") continue;
      expect(() => resolveServeOptions({ "rate-limit-auth": bad }, { ATH_HOME: "/tmp/x" })).toThrow(OptionsError);
      expect(() => resolveServeOptions({ "rate-limit-auth": bad }, { ATH_HOME: "/tmp/x" })).toThrow("--rate-limit-auth");
    }
  });

  test("with a budget off, 50 registrations from one IP in a second all pass", async () => {
    g = await inProcessGateway({ rateLimits: { auth: MINUTE, proxy: MINUTE } });
    for (let i = 0; i < 50; i++) {
      expect((await register(g, await makeAgent(), { providers: [{ provider_id: "demo", scopes: ["notes:read"] }] })).status).toBe(201);
    }
  });
});

describe("on PostgreSQL a limit holds across gateways", () => {
  let pg: Harness | undefined;
  afterEach(async () => {
    await pg?.dispose();
    pg = undefined;
  });

  test("two gateways on one schema, called alternately and concurrently, admit at most the limit together", async () => {
    pg = postgresHarness(PG_URL);
    const rateLimits = { register: { limit: 40, windowMs: 3_600_000 } };
    const masterKey = crypto.getRandomValues(new Uint8Array(32));
    g = await inProcessGateway({ store: await pg.open(), rateLimits, trustProxy: true, masterKey });
    const h = await inProcessGateway({ store: await pg.open(), rateLimits, trustProxy: true, masterKey });
    try {
      h.clock.ms = g.clock.ms;
      const statuses = await Promise.all(
        Array.from({ length: 120 }, async (_, i) => {
          const target = i % 2 === 0 ? g : h;
          const res = await target.fetch(new Request(`${BASE}/ath/agents/register`, { method: "POST", headers: { "x-forwarded-for": "192.0.2.9", "content-type": "application/json" }, body: "{}" }));
          await res.body?.cancel();
          return res.status;
        }),
      );
      const admitted = statuses.filter((s) => s !== 429).length;
      // admitted requests lack an attestation (401): what counts is that they were let through
      expect(new Set(statuses.filter((s) => s !== 429))).toEqual(new Set([401]));
      expect(admitted).toBeLessThanOrEqual(40);
      // under-admission: at most (batch − 1) = 3 per gateway stranded in a lease
      expect(admitted).toBeGreaterThanOrEqual(40 - 2 * 3);
    } finally {
      await h.close();
    }
  });
});

describe("the store's leases", () => {
  for (const dialect of ["sqlite", "postgres"] as const) {
    test(`${dialect}: never hand out more than the limit, however asked; the sweeper deletes them once their window is over`, async () => {
      const pg = dialect === "postgres" ? postgresHarness(PG_URL) : undefined;
      const own = await inProcessGateway(pg ? { store: await pg.open() } : {});
      try {
        const store = own.gw.store;
        const start = 1_000_000;
        const grants = [];
        for (const want of [4, 4, 4, 4, 4]) grants.push(await store.leaseRateCapacity("proxy:c1", start, want, 10, start + 1000));
        expect(grants).toEqual([4, 4, 2, 0, 0]);
        expect(await store.leaseRateCapacity("proxy:c1", start + 1000, 4, 10, start + 2000)).toBe(4);
        expect(await store.leaseRateCapacity("proxy:c2", start, 20, 10, start + 1000)).toBe(10);
        expect((await store.sweep(start + 1000, 0)).rate_leases).toBe(2);
        expect((await store.sweep(start + 2000, 0)).rate_leases).toBe(1);
      } finally {
        await own.close();
        await pg?.dispose();
      }
    });
  }
});
