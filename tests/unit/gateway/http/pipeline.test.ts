/**
 * The pipeline's per-request work, in process (DESIGN §10): X-Request-Id taken or generated and returned on every
 * response, and one access record per request — fields, route template, never a raw path or query.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { call, fullFlow } from "../../../helpers/agent.ts";
import { BASE, inProcessGateway, scriptedGateway, type InProcess } from "../../../helpers/in-process.ts";
import { createLogger } from "../../../../src/gateway/ops/log.ts";

let g: InProcess;
let lines: string[];
const records = () => lines.map((l) => JSON.parse(l) as Record<string, unknown>);
const requests = () => records().filter((r) => r.msg === "request");

beforeEach(async () => {
  lines = [];
  ({ g } = await scriptedGateway((p) => ({ mail: p.config({ available_scopes: ["mail:read"] }) }), {
    log: createLogger({ format: "json", level: "info", write: (l) => void lines.push(l) }),
  }));
});
afterEach(() => g.close());

describe("X-Request-Id (DESIGN §10)", () => {
  test("a sane X-Request-Id (1–128 of [A-Za-z0-9._-]) comes back as sent", async () => {
    for (const id of ["a", "req-1.2_3", "x".repeat(128), "0f8fad5b-d9cb-469f-a165-70867728950e"]) {
      const res = await g.fetch("/health", { headers: { "x-request-id": id } });
      expect(res.headers.get("x-request-id")).toBe(id);
    }
  });

  test("a missing, empty, too long or otherwise insane X-Request-Id is replaced by a generated one", async () => {
    const seen = new Set<string>();
    for (const id of [undefined, "", "x".repeat(129), "a b", "ü", "a/b", "<script>", "a\tb"]) {
      const res = await g.fetch("/health", id === undefined ? {} : { headers: { "x-request-id": id } });
      const got = res.headers.get("x-request-id");
      expect(got).toMatch(/^[0-9a-f-]{36}$/);
      seen.add(got!);
    }
    expect(seen.size).toBe(8);
  });

  test("every response carries it: JSON errors, 405, HTML error pages, the sandbox, proxied answers", async () => {
    const flow = await fullFlow(g, { provider_id: "mail", scopes: ["mail:read"] });
    const cases: [string, RequestInit][] = [
      ["/nope", {}],
      ["/ath/token", { method: "GET" }],
      ["/ath/agents/register", { method: "POST", body: "{", headers: { "content-type": "application/json" } }],
      ["/ath/consent/unknown-handle", {}],
      ["/ath/callback?state=x&code=y", {}],
      ["/demo/authorize", {}],
      ["/ath/proxy/mail/v1/messages", { headers: { authorization: `Bearer ${flow.accessToken}` } }],
      ["/ath/proxy/mail/v1/messages", { headers: { authorization: "Bearer ath_tk_wrong" } }],
    ];
    for (const [i, [path, init]] of cases.entries()) {
      const res = await g.fetch(path, { ...init, headers: { ...(init.headers as Record<string, string>), "x-request-id": `id-${i}` } });
      expect({ path, id: res.headers.get("x-request-id") }).toEqual({ path, id: `id-${i}` });
    }
  });
});

describe("the access record (DESIGN §10)", () => {
  test("one record per request: time, level, msg, request_id, method, route template, status, duration_ms", async () => {
    await g.fetch("/health", { headers: { "x-request-id": "health-1" } });
    await g.fetch("/nope/secret-path?code=abc", { headers: { "x-request-id": "nope-1" } });
    const [health, nope] = requests();
    expect(requests()).toHaveLength(2);
    expect(health).toEqual({ time: expect.any(String), level: "info", msg: "request", request_id: "health-1", method: "GET", route: "/health", status: 200, duration_ms: expect.any(Number) });
    expect(new Date(String(health!.time)).toISOString()).toBe(String(health!.time));
    expect(nope).toMatchObject({ request_id: "nope-1", route: "unmatched", status: 404 });
    expect(lines.join("")).not.toContain("secret-path");
    expect(lines.join("")).not.toContain("code=abc");
  });

  test("a proxied request is logged with its route template, client_id and provider_id — never its path or query", async () => {
    const flow = await fullFlow(g, { provider_id: "mail", scopes: ["mail:read"] });
    lines.length = 0;
    const r = await call(`${BASE}/ath/proxy/mail/v1/messages/m-42?q=private-words`, { headers: { authorization: `Bearer ${flow.accessToken}`, "x-request-id": "p-1" }, fetch: g.fetch });
    expect(r.status).toBe(200);
    expect(requests()).toEqual([
      { time: expect.any(String), level: "info", msg: "request", request_id: "p-1", method: "GET", route: "/ath/proxy/{provider_id}/*", status: 200, duration_ms: expect.any(Number), client_id: flow.client.client_id, provider_id: "mail" },
    ]);
    expect(lines.join("")).not.toContain("m-42");
    expect(lines.join("")).not.toContain("private-words");
    expect(lines.join("")).not.toContain(flow.accessToken);
  });

  test("authorize and token records name the client and the provider", async () => {
    const flow = await fullFlow(g, { provider_id: "mail", scopes: ["mail:read"] });
    const byRoute = (route: string) => requests().filter((r) => r.route === route);
    expect(byRoute("/ath/agents/register")).toEqual([expect.objectContaining({ status: 201, client_id: flow.client.client_id })]);
    expect(byRoute("/ath/authorize")).toEqual([expect.objectContaining({ status: 200, client_id: flow.client.client_id, provider_id: "mail" })]);
    expect(byRoute("/ath/token")).toEqual([expect.objectContaining({ status: 200, client_id: flow.client.client_id, provider_id: "mail" })]);
  });

  test("at --log-level warn no access record is written", async () => {
    const quiet: string[] = [];
    const q = await inProcessGateway({ log: createLogger({ format: "json", level: "warn", write: (l) => void quiet.push(l) }) });
    try {
      expect((await q.fetch("/health")).status).toBe(200);
      expect((await q.fetch("/nope")).status).toBe(404);
      expect(quiet).toEqual([]);
    } finally {
      await q.close();
    }
  });
});
