/** `tools/list` answers only the tools a client may call (DESIGN §18): the upstream's answer filtered as it flows. */
import { describe, expect, test } from "bun:test";
import { filterMessage, filterToolLists, LIST_TTL_MS } from "../../../../src/gateway/mcp/tools-list.ts";

describe("filterToolLists", () => {
  const list = (id: number) => ({ jsonrpc: "2.0", id, result: { tools: [{ name: "keep" }, { name: "drop" }], nextCursor: "c" } });
  const keep = (n: string) => n !== "drop";

  test("a JSON answer: only the answer to the tools/list request is filtered", async () => {
    const res = new Response(JSON.stringify([list(1), list(2)]), { headers: { "content-type": "application/json" } });
    const out = await filterToolLists(res, new Set(["1"]), keep, { "content-type": "application/json", "content-length": "999" });
    expect(out.headers.get("content-length")).toBeNull();
    const [a, b] = (await out.json()) as { result: { tools: { name: string }[]; nextCursor: string } }[];
    expect(a!.result).toEqual({ tools: [{ name: "keep" }], nextCursor: "c" });
    expect(b!.result.tools.length).toBe(2);
  });

  test("an event stream split anywhere: the matching event rewritten, every other byte passed", async () => {
    const text = `event: message\nid: e1\ndata: ${JSON.stringify({ jsonrpc: "2.0", method: "notifications/message", params: { drop: 1 } })}\n\nid: e2\ndata: ${JSON.stringify(list(7))}\n\n`;
    const bytes = new TextEncoder().encode(text);
    const body = new ReadableStream<Uint8Array>({
      start(c) {
        for (let i = 0; i < bytes.length; i += 7) c.enqueue(bytes.slice(i, i + 7));
        c.close();
      },
    });
    const out = await filterToolLists(new Response(body, { headers: { "content-type": "text/event-stream" } }), new Set(["7"]), keep, { "content-type": "text/event-stream" });
    const events = (await out.text()).split("\n\n");
    expect(events[0]).toBe(text.split("\n\n")[0]!);
    expect(events[1]).toBe(`id: e2\ndata: ${JSON.stringify({ ...list(7), result: { tools: [{ name: "keep" }], nextCursor: "c" } })}`);
  });

  test("on the 2026 wire a list filtered per person gets cacheScope private and a ttlMs never above the upstream's nor 60 s; every tool is shown to the schema reader", () => {
    const seen: unknown[][] = [];
    const r = { ids: new Set(["1"]), keep, hints: true, seen: (tools: readonly unknown[]) => void seen.push([...tools]) };
    const ttl = (given: unknown) => (filterMessage({ ...list(1), result: { ...list(1).result, ...(given === undefined ? {} : { ttlMs: given }) } }, r.ids, r) as { result: { ttlMs: number; cacheScope: string } }).result;
    expect(ttl(undefined)).toMatchObject({ ttlMs: LIST_TTL_MS, cacheScope: "private" });
    expect(ttl(5_000).ttlMs).toBe(5_000);
    expect(ttl(3_600_000).ttlMs).toBe(LIST_TTL_MS);
    expect(ttl(0).ttlMs).toBe(0);
    expect(ttl("soon").ttlMs).toBe(LIST_TTL_MS);
    expect(seen[0]).toEqual([{ name: "keep" }, { name: "drop" }]);
  });
});
