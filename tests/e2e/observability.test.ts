/**
 * Observability through the compiled binary against oidc-provider (DESIGN §10): a full flow with `--log-format json`
 * whose every written line is a JSON record and carries none of the flow's secrets; a strict parse of a /metrics
 * scrape after it; and a 32 MiB chunked body refused at --max-body without the process's memory growing by more.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { call, fullFlow } from "../helpers/agent.ts";
import { Browser } from "../helpers/browser.ts";
import { parseExposition, valueOf } from "../helpers/prometheus.ts";
import { startWorld, type World } from "../helpers/world.ts";

const METRICS_TOKEN = "metrics-e2e-token-0123456789";
let w: World;
let flow: Awaited<ReturnType<typeof fullFlow>>;
let browser: Browser;

beforeAll(async () => {
  w = await startWorld({ binary: true, extraArgs: ["--log-format", "json", "--log-level", "debug", "--metrics-token", METRICS_TOKEN] });
  browser = new Browser();
  flow = await fullFlow(w.baseUrl, { provider_id: "mail", scopes: ["openid", "offline_access", "mail:read"], consent: { browser } });
});
afterAll(() => w?.stop());

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

describe("a full flow, logged as JSON", () => {
  test("every line the gateway wrote is a JSON record, and none carries a secret of the flow", async () => {
    const token = flow.accessToken;
    // requests whose paths, queries and headers carry secrets, and failures that get logged
    const first = await call(`${w.baseUrl}/ath/proxy/mail/v1/messages?access_token=${token}&code=${flow.consent.code}`, { headers: bearer(token) });
    expect({ status: first.status, text: first.text }).toEqual({ status: 200, text: expect.any(String) });
    expect((await call(`${w.baseUrl}/ath/proxy/mail/v1/messages`, { headers: bearer(`${token}x`) })).status).toBe(401);
    expect((await call(`${w.baseUrl}/ath/callback?code=${flow.consent.code}&state=${token}`)).status).toBe(400);
    expect((await call(`${w.baseUrl}/nope/${token}/${flow.client.client_secret}`)).status).toBe(404);
    expect((await call(`${w.baseUrl}/ath/token`, { form: { grant_type: "authorization_code", ...flow.client, code: flow.consent.code!, ath_session_id: String(flow.authorization.json.ath_session_id), agent_attestation: "x" } })).status).toBe(401);
    expect((await call(`${w.baseUrl}/ath/admin/agents`, { headers: { "x-ath-user-token": w.gw.adminToken } })).status).toBe(200);
    expect((await call(`${w.baseUrl}/ath/revoke`, { form: { token, ...flow.client } })).status).toBe(200);
    expect((await call(`${w.baseUrl}/ath/proxy/mail/v1/messages`, { headers: bearer(token) })).status).toBe(401);
    await w.gw.stop(); // flushes
    const output = w.gw.output();

    const upstream = w.auth.issuedTokens.map((t) => t.value);
    expect(upstream.length).toBeGreaterThanOrEqual(2); // access and refresh tokens
    const secrets: Record<string, string> = {
      client_secret: flow.client.client_secret,
      ath_token: token,
      agent_code: flow.consent.code!,
      ath_session_id: String(flow.authorization.json.ath_session_id),
      admin_token: w.gw.adminToken,
      metrics_token: METRICS_TOKEN,
      provider_client_secret: w.auth.postClient.client_secret,
      ...Object.fromEntries(upstream.map((v, i) => [`upstream_token_${i}`, v])),
      // the browser's cookies: the gateway's binding cookie and the upstream's (those it cleared are empty)
      ...Object.fromEntries(browser.cookies.filter((c) => c.value !== "").map((c) => [`cookie_${c.name}`, c.value])),
    };
    expect(Object.keys(secrets).some((k) => /^cookie_.*ath/.test(k))).toBe(true);
    const leaks = Object.entries(secrets).filter(([, v]) => output.includes(v)).map(([k, v]) => `${k}: ${output.slice(Math.max(0, output.indexOf(v) - 300), output.indexOf(v) + 100)}`);
    expect(leaks).toEqual([]);

    const lines = output.split("\n").filter((l) => l.trim() !== "");
    const records = lines.map((l) => {
      try {
        return JSON.parse(l) as Record<string, unknown>;
      } catch {
        throw new Error(`not a JSON line: ${l}`);
      }
    });
    expect(records.filter((r) => r.level === "warn" && String(r.msg).includes("--dev"))).toHaveLength(1);
    expect(records.find((r) => String(r.msg).startsWith("listening on"))).toEqual({ time: expect.any(String), level: "info", msg: `listening on ${w.baseUrl}` });
    const requests = records.filter((r) => r.msg === "request");
    expect(requests.length).toBeGreaterThanOrEqual(12);
    for (const r of requests) {
      expect(Object.keys(r).sort()).toEqual(
        ["time", "level", "msg", "request_id", "method", "route", "status", "duration_ms", ...(r.client_id ? ["client_id"] : []), ...(r.provider_id ? ["provider_id"] : [])].sort(),
      );
      expect(String(r.route)).not.toContain("?");
    }
    await w.gw.restart();
  });
});

describe("GET /metrics after a full flow", () => {
  test("a strict parse of every line; the flow's counters moved with their labels", async () => {
    const again = await fullFlow(w.baseUrl, { provider_id: "mail", scopes: ["openid", "mail:read"] });
    expect((await call(`${w.baseUrl}/ath/proxy/mail/v1/messages`, { headers: bearer(again.accessToken) })).status).toBe(200);
    expect((await call(`${w.baseUrl}/metrics`)).status).toBe(401);
    const res = await fetch(`${w.baseUrl}/metrics`, { headers: bearer(METRICS_TOKEN) });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
    const m = parseExposition(await res.text());
    expect(valueOf(m, "ath_agents_registered_total", { status: "approved" })).toBe(1);
    expect(valueOf(m, "ath_tokens_issued_total", { provider: "mail" })).toBe(1);
    expect(valueOf(m, "ath_proxy_requests_total", { provider: "mail", status: "200" })).toBe(1);
    expect(valueOf(m, "ath_proxy_upstream_duration_seconds_count", { provider: "mail" })).toBe(1);
    expect(valueOf(m, "ath_http_requests_total", { route: "/ath/token", method: "POST", status: "200" })).toBe(1);
    expect(valueOf(m, "ath_http_requests_total", { route: "/ath/callback", method: "GET", status: "303" }) + valueOf(m, "ath_http_requests_total", { route: "/ath/callback", method: "GET", status: "200" })).toBe(1);
    const rss = valueOf(m, "process_resident_memory_bytes");
    expect(rss).toBeGreaterThan(10_000_000);
    expect(Math.abs(rss - vmRss(w.gw.pid()!))).toBeLessThan(rss / 2);
  });
});

describe("--max-body while streaming (DESIGN §10)", () => {
  test("a 32 MiB chunked body to a protocol endpoint is refused with 413 after about the limit: RSS grows by no more than for a body just over the limit (± the limit)", async () => {
    const LIMIT = 64 * 1024;
    // Big enough that what the loopback sockets buffer before the refusal arrives (a few MiB on a loaded machine) is
    // far from all of it.
    const BIG = 32 << 20;
    const send = async (size: number) => {
      const chunk = new Uint8Array(16 * 1024).fill(0x20);
      let sent = 0;
      const body = new ReadableStream<Uint8Array>({
        pull(controller) {
          if (sent >= size) return controller.close();
          sent += chunk.byteLength;
          controller.enqueue(chunk);
        },
      });
      const res = await fetch(`${w.baseUrl}/ath/agents/register`, { method: "POST", headers: { "content-type": "application/json" }, body, duplex: "half" } as RequestInit);
      expect({ status: res.status, code: ((await res.json()) as { code: string }).code }).toEqual({ status: 413, code: "PAYLOAD_TOO_LARGE" });
      return sent;
    };
    // Each refused request costs the runtime some memory of its own (its connection, ~100–250 KB here, whatever the
    // body): compare the 32 MiB body with one just over the limit, interleaved, after a warm-up.
    for (let i = 0; i < 10; i++) await send(BIG);
    const pid = w.gw.pid()!;
    const growth = { big: 0, small: 0 };
    /** Per round, what the 32 MiB body grew RSS by beyond the small one. */
    const excess: number[] = [];
    let sentMost = 0;
    const ROUNDS = 9;
    for (let i = 0; i < ROUNDS; i++) {
      let before = vmRss(pid);
      sentMost = Math.max(sentMost, await send(BIG));
      const big = vmRss(pid) - before;
      before = vmRss(pid);
      await send(LIMIT + 16 * 1024);
      const small = vmRss(pid) - before;
      growth.big += big;
      growth.small += small;
      excess.push(big - small);
    }
    // The median round: the gateway's own background work (a WAL checkpoint in its worker thread, a GC) lands in one
    // round or two; a body buffered whole would show in every round.
    const perRequest = excess.sort((a, b) => a - b)[Math.floor(ROUNDS / 2)]!;
    console.log(`[max-body] RSS growth per refused request: 32 MiB body ${Math.round(growth.big / ROUNDS)} B, 80 KiB body ${Math.round(growth.small / ROUNDS)} B, median excess ${perRequest} B; the client had sent at most ${sentMost} B of 32 MiB`);
    expect(perRequest).toBeLessThanOrEqual(LIMIT);
    // the gateway stopped reading: the client was refused long before it could send the body (what it got out is at
    // most what the sockets between them buffer)
    expect(sentMost).toBeLessThan(8 << 20);
  });
});

/** VmRSS of a process, in bytes (/proc/<pid>/status). */
function vmRss(pid: number): number {
  const kb = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1];
  if (kb === undefined) throw new Error(`no VmRSS for ${pid}`);
  return Number(kb) * 1024;
}
