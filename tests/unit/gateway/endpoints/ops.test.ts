/**
 * GET /metrics and GET /ready in process (DESIGN §10): who may scrape, a strict parse of the exposition after a full
 * flow, the counters that moved and their pinned labels (route templates, never raw paths), readiness.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { call, fullFlow } from "../../../helpers/agent.ts";
import { expectError } from "../../../helpers/expect-error.ts";
import { ADMIN_TOKEN, BASE, inProcessGateway, scriptedGateway, type InProcess } from "../../../helpers/in-process.ts";
import { parseExposition, valueOf } from "../../../helpers/prometheus.ts";

const METRICS_TOKEN = "metrics_in_process_token";
let g: InProcess;
afterEach(() => g.close());

const scrape = async (headers: Record<string, string> = { authorization: `Bearer ${METRICS_TOKEN}` }) => {
  const res = await g.fetch("/metrics", { headers });
  return { res, text: await res.text() };
};

describe("GET /metrics — access", () => {
  test("needs the metrics token or the admin token; anything else is 401 UNAUTHORIZED", async () => {
    g = await inProcessGateway({ metricsToken: METRICS_TOKEN });
    for (const headers of [{}, { authorization: "Bearer wrong" }, { authorization: `Basic ${METRICS_TOKEN}` }, { "x-ath-user-token": METRICS_TOKEN }] as Record<string, string>[]) {
      const { res, text } = await scrape(headers);
      expectError({ status: res.status, headers: res.headers, text }, "UNAUTHORIZED");
      expect(res.headers.get("www-authenticate")).toBe('Bearer realm="ath"');
    }
    for (const headers of [{ authorization: `Bearer ${METRICS_TOKEN}` }, { authorization: `Bearer ${ADMIN_TOKEN}` }, { "x-ath-user-token": ADMIN_TOKEN }] as Record<string, string>[]) {
      const { res } = await scrape(headers);
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toBe("text/plain; version=0.0.4; charset=utf-8");
    }
  });

  test("--metrics-public opens it to anyone", async () => {
    g = await inProcessGateway({ metricsPublic: true });
    expect((await scrape({})).res.status).toBe(200);
  });
});

describe("GET /metrics — what it counts", () => {
  test("after a full flow, a proxied call, a refresh, a revocation and a 429, every line parses and the counters moved with their labels", async () => {
    let p;
    ({ g, p } = await scriptedGateway((p) => ({ mail: p.config({ available_scopes: ["mail:read"] }) }), {
      metricsToken: METRICS_TOKEN,
      rateLimits: { proxy: { limit: 3, windowMs: 1000 } },
    }));
    const flow = await fullFlow(g, { provider_id: "mail", scopes: ["mail:read"] });
    const bearer = { authorization: `Bearer ${flow.accessToken}` };
    expect((await call(`${BASE}/ath/proxy/mail/v1/messages/private-id-1?q=x`, { headers: bearer, fetch: g.fetch })).status).toBe(200);
    p.expireAccessTokens();
    expect((await call(`${BASE}/ath/proxy/mail/v1/messages`, { headers: bearer, fetch: g.fetch })).status).toBe(200);
    expect((await call(`${BASE}/ath/proxy/mail/v1/messages`, { headers: bearer, fetch: g.fetch })).status).toBe(200);
    expect((await call(`${BASE}/ath/proxy/mail/v1/messages`, { headers: bearer, fetch: g.fetch })).status).toBe(429);
    expect((await call(`${BASE}/ath/proxy/unknown-provider/x`, { headers: bearer, fetch: g.fetch })).status).toBe(403);
    const revoked = await call(`${BASE}/ath/revoke`, { form: { token: flow.accessToken, ...flow.client }, fetch: g.fetch });
    expect(revoked.status).toBe(200);
    expect((await g.fetch("/nope/abc")).status).toBe(404);

    const { res, text } = await scrape();
    expect(res.status).toBe(200);
    const m = parseExposition(text);
    expect(valueOf(m, "ath_build_info", { version: "0.0.0-test" })).toBe(1);
    expect(valueOf(m, "ath_agents_registered_total", { status: "approved" })).toBe(1);
    expect(valueOf(m, "ath_tokens_issued_total", { provider: "mail" })).toBe(1);
    expect(valueOf(m, "ath_tokens_revoked_total", { provider: "mail" })).toBe(1);
    expect(valueOf(m, "ath_upstream_refresh_total", { provider: "mail", result: "ok" })).toBe(1);
    expect(valueOf(m, "ath_rate_limited_total", { limit: "proxy" })).toBe(1);
    expect(valueOf(m, "ath_proxy_requests_total", { provider: "mail", status: "200" })).toBe(3);
    expect(valueOf(m, "ath_proxy_requests_total", { provider: "mail", status: "429" })).toBe(1);
    expect(valueOf(m, "ath_proxy_requests_total", { provider: "none", status: "403" })).toBe(1);
    // 3 answered upstream, one of them twice (401, refresh, retry)
    expect(valueOf(m, "ath_proxy_upstream_duration_seconds_count", { provider: "mail" })).toBe(4);
    const route = (path: string, method: string, status: number) => valueOf(m, "ath_http_requests_total", { route: path, method, status: String(status) });
    expect(route("/ath/agents/register", "POST", 201)).toBe(1);
    expect(route("/ath/authorize", "POST", 200)).toBe(1);
    expect(route("/ath/token", "POST", 200)).toBe(1);
    expect(route("/ath/revoke", "POST", 200)).toBe(1);
    expect(route("/ath/consent/{handle}", "GET", 200)).toBe(1);
    expect(route("/ath/proxy/{provider_id}/*", "GET", 200)).toBe(3);
    expect(route("unmatched", "GET", 404)).toBe(1);
    expect(valueOf(m, "ath_http_request_duration_seconds_count", { route: "/ath/proxy/{provider_id}/*" })).toBe(5);
    expect(valueOf(m, "process_resident_memory_bytes")).toBeGreaterThan(1_000_000);
    expect(valueOf(m, "process_start_time_seconds")).toBeGreaterThan(1_700_000_000);
    // labels come from bounded sets: no raw path, query or id a client chose
    for (const family of m.values()) {
      for (const s of family.samples) for (const v of Object.values(s.labels)) expect(v).not.toMatch(/private-id|\?|unknown-provider|abc/);
    }
    for (const name of ["ath_http_requests_total", "ath_http_request_duration_seconds", "ath_proxy_requests_total", "ath_proxy_upstream_duration_seconds",
      "ath_tokens_issued_total", "ath_tokens_revoked_total", "ath_upstream_refresh_total", "ath_agents_registered_total", "ath_rate_limited_total",
      "process_resident_memory_bytes", "process_start_time_seconds", "ath_build_info"]) {
      expect({ name, present: m.has(name) }).toEqual({ name, present: true });
    }
  });
});

describe("GET /ready", () => {
  test("200 while the store answers; 503 NOT_READY when it does not (/health stays 200)", async () => {
    g = await inProcessGateway();
    const ok = await g.fetch("/ready");
    expect({ status: ok.status, body: await ok.json() }).toEqual({ status: 200, body: { status: "ready" } });
    g.gw.store.getMeta = () => Promise.reject(new Error("connection refused"));
    const down = await g.fetch("/ready");
    expectError({ status: down.status, headers: down.headers, text: await down.text() }, "NOT_READY");
    expect((await g.fetch("/health")).status).toBe(200);
  });
});

describe("the exposition parser the scrape tests rely on", () => {
  test("refuses what the text format does not allow", () => {
    const ok = '# HELP a_total A.\n# TYPE a_total counter\na_total{x="1"} 2\n';
    expect(parseExposition(ok).get("a_total")?.samples).toEqual([{ name: "a_total", labels: { x: "1" }, value: 2 }]);
    for (const bad of [
      '# TYPE a_total counter\na_total{x="1"} 2', // no final line feed
      'a_total{x="1"} 2\n', // no TYPE
      '# TYPE a_total counter\na_total{x=1} 2\n', // unquoted label value
      '# TYPE a_total counter\na_total{x="a\\q"} 2\n', // invalid escape
      '# TYPE a_total counter\na_total{1x="a"} 2\n', // invalid label name
      '# TYPE a_total counter\na_total 2\na_total 3\n', // the same series twice
      '# TYPE a_total counter\na_total two\n', // not a number
      '# TYPE a_total counter\n\na_total 2\n', // empty line
      "# a comment\n", // neither HELP nor TYPE
      '# TYPE h histogram\nh_bucket{le="1"} 2\nh_bucket{le="+Inf"} 1\nh_sum 1\nh_count 1\n', // not cumulative
      '# TYPE h histogram\nh_bucket{le="1"} 1\nh_sum 1\nh_count 1\n', // no +Inf bucket
    ]) {
      expect(() => parseExposition(bad)).toThrow();
    }
  });
});
