/**
 * ops/tracing.ts: spans belong to a request while it runs. Work it leaves behind — a timer it set, a queue it
 * nudged — inherits its async context but makes no span once its span ended (issue 40: an idle gateway with a
 * webhook exported one a second); an outbound call after the request carries no traceparent of it either.
 */
import { describe, expect, test } from "bun:test";
import { createTracer } from "../../../../src/gateway/ops/tracing.ts";
import { SILENT } from "../../../../src/gateway/ops/log.ts";
import type { Store } from "../../../../src/store/types.ts";

describe("spans of a request, and of what it left behind", () => {
  test("a store call inside the request is a span; one from a timer the request set, after it ended, is none", async () => {
    const exported: { name: string }[][] = [];
    const post = async (_url: unknown, init?: RequestInit) => {
      const body = JSON.parse(String(init?.body)) as { resourceSpans: { scopeSpans: { spans: { name: string }[] }[] }[] };
      exported.push(body.resourceSpans.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans)));
      return new Response("{}");
    };
    const tracer = createTracer({ endpoint: "http://collector.test", version: "t", fetch: post, log: SILENT });
    const store = tracer.wrapStore({ kind: "sqlite", getMeta: async () => null } as unknown as Store);
    let later: Promise<void> = Promise.resolve();
    await tracer.request(new Request("http://gw.test/x"), async () => {
      await store.getMeta("a");
      later = new Promise((resolve) => setTimeout(() => void store.getMeta("b").then(() => resolve()), 20));
      return new Response("ok");
    });
    await later;
    await tracer.flush();
    const names = exported.flat().map((s) => s.name);
    expect(names.filter((n) => n.startsWith("store."))).toEqual(["store.getMeta"]);
    expect(names).toContain("GET");
  });

  test("an outbound call after the request ended carries no traceparent", async () => {
    const seen: (string | null)[] = [];
    const tracer = createTracer({ endpoint: "http://collector.test", version: "t", fetch: async () => new Response("{}"), log: SILENT });
    const fetch = tracer.wrapFetch(async (_input, init) => {
      seen.push(new Headers(init?.headers).get("traceparent"));
      return new Response("");
    });
    let later: Promise<unknown> = Promise.resolve();
    await tracer.request(new Request("http://gw.test/x"), async () => {
      await fetch("http://up.test/1");
      later = new Promise((resolve) => setTimeout(() => resolve(fetch("http://up.test/2")), 20));
      return new Response("ok");
    });
    await later;
    expect(seen[0]).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
    expect(seen[1]).toBeNull();
  });
});
