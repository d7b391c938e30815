/**
 * Rate limits through real `ath serve` processes (DESIGN §10). Registrations count per client IP as the listener sees
 * it, or as the last X-Forwarded-For hop under --trust-proxy. Across two processes on one PostgreSQL database the
 * instances lease capacity
 * from the database in batches, so together they admit no more than the limit (the issue allows 1.1×) while a
 * proxied request costs no database write of its own; the one that crosses it gets 429 with Retry-After and
 * RateLimit-*. Each run uses its own schema, dropped afterwards.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { SQL } from "bun";
import { fullFlow, register } from "../helpers/agent.ts";
import { makeAgent } from "../helpers/attestations.ts";
import { startGateway, type Gateway } from "../helpers/gateway.ts";
import { PG_URL } from "../helpers/store-harness.ts";
import { startPostgresPair, type PostgresPair } from "../helpers/postgres-pair.ts";
import type { UpstreamApi } from "../helpers/upstream-api.ts";
import type { UpstreamAuth } from "../helpers/upstream-auth.ts";

const LIMIT = 60;
let pair: PostgresPair;
let schema: string;
let auth: UpstreamAuth;
let api: UpstreamApi;
let a: Gateway;
let b: Gateway;

beforeAll(async () => {
  // an hour's window: the test cannot straddle two windows unless started in an hour's last seconds (waited out below)
  pair = await startPostgresPair({ extraArgs: ["--rate-limit-proxy", `${LIMIT}/h`] });
  ({ auth, api, a, b, schema } = pair);
}, 30_000);

afterAll(() => pair?.stop());

test("two instances on one PostgreSQL database together admit no more than the proxy limit of one client (≤ 1.1×), and refuse the rest with 429 and its headers", async () => {
  const untilHour = 3_600_000 - (Date.now() % 3_600_000);
  if (untilHour < 20_000) await Bun.sleep(untilHour + 100);
  const flow = await fullFlow(a.baseUrl, { provider_id: "mail", scopes: ["mail:read"] });
  const before = api.requests.length;
  // 150 calls, alternating between the instances, 10 at a time
  const results: { status: number; headers: Headers }[] = [];
  for (let batch = 0; batch < 15; batch++) {
    results.push(
      ...(await Promise.all(
        Array.from({ length: 10 }, async (_, i) => {
          const gw = (batch * 10 + i) % 2 === 0 ? a : b;
          const res = await fetch(`${gw.baseUrl}/ath/proxy/mail/v1/messages`, { headers: { authorization: `Bearer ${flow.accessToken}` } });
          await res.body?.cancel();
          return { status: res.status, headers: res.headers };
        }),
      )),
    );
  }
  const admitted = results.filter((r) => r.status === 200).length;
  const refused = results.filter((r) => r.status === 429);
  console.log(`[rate-limits] ${LIMIT}/h over two instances: ${admitted} of 150 admitted, ${refused.length} refused`);
  expect(admitted + refused.length).toBe(150);
  expect(admitted).toBeLessThanOrEqual(Math.floor(LIMIT * 1.1));
  // what a lease strands on the other instance: at most (batch − 1) = 5 each
  expect(admitted).toBeGreaterThanOrEqual(LIMIT - 2 * 5);
  expect(api.requests.length - before).toBe(admitted);
  for (const r of refused) {
    expect({
      limit: r.headers.get("ratelimit-limit"),
      remaining: r.headers.get("ratelimit-remaining"),
      retryAfter: Number(r.headers.get("retry-after")) > 0,
      reset: r.headers.get("ratelimit-reset") === r.headers.get("retry-after"),
    }).toEqual({ limit: String(LIMIT), remaining: "0", retryAfter: true, reset: true });
  }
  // the database handed out exactly the limit, in leases
  const sql = new SQL(PG_URL);
  try {
    const [row] = await sql.unsafe(`SELECT used FROM "${schema}".rate_leases WHERE rkey LIKE 'proxy:%'`);
    expect(Number(row.used)).toBe(LIMIT);
  } finally {
    await sql.close();
  }
}, 60_000);

describe("--rate-limit-register per client IP", () => {
  const provider = () => ({
    display_name: "Sample Mail",
    available_scopes: ["mail:read"],
    authorize_endpoint: auth.authorizeEndpoint,
    token_endpoint: auth.tokenEndpoint,
    client_id: auth.postClient.client_id,
    client_secret: auth.postClient.client_secret,
  });
  const registerFrom = async (gw: Gateway, forwardedFor?: string) => {
    const agent = await makeAgent();
    const target = {
      baseUrl: gw.baseUrl,
      fetch: (req: Request) => {
        if (forwardedFor) req.headers.set("x-forwarded-for", forwardedFor);
        return fetch(req);
      },
    };
    return register(target, agent, { providers: [{ provider_id: "mail", scopes: ["mail:read"] }] });
  };

  test("the listener's peer address is the key: the third registration from 127.0.0.1 is 429; X-Forwarded-For is ignored without --trust-proxy", async () => {
    const gw = await startGateway({ providers: { mail: provider() }, extraArgs: ["--rate-limit-register", "2/h"] });
    try {
      expect((await registerFrom(gw)).status).toBe(201);
      expect((await registerFrom(gw, "198.51.100.1")).status).toBe(201);
      const third = await registerFrom(gw, "198.51.100.2");
      expect(third.status).toBe(429);
      expect(third.json).toMatchObject({ code: "RATE_LIMITED", details: { limit: "register" } });
      expect({ limit: third.headers.get("ratelimit-limit"), remaining: third.headers.get("ratelimit-remaining") }).toEqual({ limit: "2", remaining: "0" });
      expect(Number(third.headers.get("retry-after"))).toBeGreaterThan(0);
    } finally {
      await gw.cleanup();
    }
  });

  test("with --trust-proxy the last X-Forwarded-For hop is the key", async () => {
    const gw = await startGateway({ providers: { mail: provider() }, extraArgs: ["--rate-limit-register", "1/h", "--trust-proxy"] });
    try {
      expect((await registerFrom(gw, "203.0.113.5, 198.51.100.1")).status).toBe(201);
      expect((await registerFrom(gw, "203.0.113.6, 198.51.100.1")).status).toBe(429);
      expect((await registerFrom(gw, "203.0.113.5, 198.51.100.2")).status).toBe(201);
    } finally {
      await gw.cleanup();
    }
  });
});
