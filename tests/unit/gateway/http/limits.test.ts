/**
 * Size limits of DESIGN §10, in process: `--max-body` for protocol bodies (declared or chunked) → 413
 * PAYLOAD_TOO_LARGE, JSON nesting over 32 → 400 INVALID_REQUEST on every endpoint (/ath/revoke included), and
 * `--max-proxy-body` for proxied bodies → 413 before or while streaming, the upstream getting nothing it should not.
 */
import { afterEach, describe, expect, test } from "bun:test";
import { fullFlow } from "../../../helpers/agent.ts";
import { expectError } from "../../../helpers/expect-error.ts";
import { ADMIN_TOKEN, asError, BASE, inProcessGateway, scriptedGateway, type InProcess } from "../../../helpers/in-process.ts";
import type { ScriptedProvider } from "../../../helpers/scripted-provider.ts";

let g: InProcess;
afterEach(() => g.close());

/** A body sent without Content-Length, in chunks, as a chunked upload arrives. */
function chunked(total: number, chunk = 1024): ReadableStream<Uint8Array> {
  let sent = 0;
  return new ReadableStream({
    pull(controller) {
      if (sent >= total) return controller.close();
      const n = Math.min(chunk, total - sent);
      sent += n;
      controller.enqueue(new Uint8Array(n).fill(0x20));
    },
  });
}

describe("--max-body (DESIGN §10)", () => {
  test("a protocol body over --max-body is 413 PAYLOAD_TOO_LARGE, declared or chunked; one at the limit is read", async () => {
    g = await inProcessGateway({ maxBody: 2048 });
    const post = (body: BodyInit, headers: Record<string, string> = {}) =>
      g.fetch("/ath/agents/register", { method: "POST", headers: { "content-type": "application/json", ...headers }, body, duplex: "half" } as RequestInit);
    expectError(await asError(await post(" ".repeat(2049))), "PAYLOAD_TOO_LARGE");
    expectError(await asError(await post(chunked(5 << 20))), "PAYLOAD_TOO_LARGE");
    // at the limit the body is read (and found wanting for other reasons)
    const atLimit = await asError(await post(`{}${" ".repeat(2046)}`));
    expect(JSON.parse(atLimit.text).code).not.toBe("PAYLOAD_TOO_LARGE");
  });
});

describe("JSON nesting ≤ 32 (DESIGN §10)", () => {
  const nested = (depth: number) => `${'{"a":'.repeat(depth - 1)}{}${"}".repeat(depth - 1)}`;

  test("a body nested 33 deep is 400 INVALID_REQUEST on every JSON endpoint, /ath/revoke and the admin API included", async () => {
    g = await inProcessGateway();
    for (const [path, headers] of [
      ["/ath/agents/register", {}],
      ["/ath/authorize", {}],
      ["/ath/token", {}],
      ["/ath/revoke", {}],
      ["/ath/introspect", { authorization: `Bearer ${ADMIN_TOKEN}` }],
      ["/ath/admin/providers", { "x-ath-user-token": ADMIN_TOKEN }],
    ] as [string, Record<string, string>][]) {
      const res = await g.fetch(path, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: nested(33) });
      const body = expectError(await asError(res), "INVALID_REQUEST");
      expect({ path, details: body.details }).toEqual({ path, details: { field: "body", reason: "nesting" } });
    }
  });

  test("32 deep is parsed; brackets inside strings do not count", async () => {
    g = await inProcessGateway();
    for (const body of [nested(32), JSON.stringify({ agent_id: "[".repeat(100), note: "{".repeat(100) })]) {
      const res = await g.fetch("/ath/revoke", { method: "POST", headers: { "content-type": "application/json" }, body });
      expect(res.status).toBe(200);
    }
  });
});

describe("--max-proxy-body (DESIGN §10)", () => {
  let p: ScriptedProvider;
  const setup = async () => {
    ({ g, p } = await scriptedGateway((p) => ({ mail: p.config({ available_scopes: ["mail:send"] }) }), { maxProxyBody: 4096 }));
    return fullFlow(g, { provider_id: "mail", scopes: ["mail:send"] });
  };
  const proxyPost = (token: string, body: BodyInit) =>
    g.fetch(new Request(`${BASE}/ath/proxy/mail/v1/messages`, { method: "POST", headers: { authorization: `Bearer ${token}` }, body, duplex: "half" } as RequestInit));

  test("a declared body over the limit is 413 before anything reaches the upstream", async () => {
    const flow = await setup();
    const res = await proxyPost(flow.accessToken, "x".repeat(4097));
    expectError(await asError(res), "PAYLOAD_TOO_LARGE", { limit: 4096 });
    expect(p.api).toEqual([]);
  });

  test("a chunked body is cut where it crosses the limit: 413; one at the limit passes whole", async () => {
    const flow = await setup();
    expectError(await asError(await proxyPost(flow.accessToken, chunked(64 * 1024))), "PAYLOAD_TOO_LARGE");
    const ok = await proxyPost(flow.accessToken, chunked(4096));
    expect(ok.status).toBeLessThan(300);
    expect(p.api.map((r) => r.body.length).at(-1)).toBe(4096);
  });
});
