/**
 * The relay's HTTP/1.1 client in process (src/gateway/proxy/http1.ts), against real sockets: which calls it speaks
 * itself and which it hands to `fetch`, the canceller, and the request fields it refuses to write. The framing of
 * answers is held end to end by tests/e2e/upstream-framing.test.ts.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Server, TCPSocketListener } from "bun";
import { createUpstreamClient, type Canceller, type UpstreamInit } from "../../../../src/gateway/proxy/http1.ts";

let server: Server<undefined>;
let seen: { method: string; body: string; headers: Record<string, string> }[] = [];
/** A listener that reads requests and never answers (the canceller's case). */
let silent: TCPSocketListener<undefined>;
let silentRequests = 0;

beforeAll(() => {
  server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      const body = await req.text();
      seen.push({ method: req.method, body, headers: Object.fromEntries(req.headers) });
      return new Response(`echo:${body}`, { headers: { "content-type": "text/plain" } });
    },
  });
  silent = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data: () => void silentRequests++ } });
});
afterAll(() => {
  server.stop(true);
  silent.stop(true);
});

/** A fallback that records what it was given and answers 299. */
function recordingFallback() {
  const calls: { input: unknown; init: UpstreamInit | undefined }[] = [];
  const fetch = async (input: string | URL | Request, init?: RequestInit) => {
    calls.push({ input, init: init as UpstreamInit | undefined });
    return new Response("fallback", { status: 299 });
  };
  return { calls, fetch };
}

const url = (path: string) => new URL(`http://127.0.0.1:${server.port}${path}`);

describe("what the client speaks itself", () => {
  test("http with no body or a byte body: sent on its own connection, fetch never called", async () => {
    const fb = recordingFallback();
    const client = createUpstreamClient(fb.fetch, {});
    try {
      seen = [];
      const get = await client.fetch(url("/a"), { method: "GET", headers: new Headers({ "x-a": "1" }) });
      expect(await get.text()).toBe("echo:");
      const post = await client.fetch(url("/b"), { method: "POST", headers: { "content-type": "text/plain" }, body: new TextEncoder().encode("héllo") });
      expect(await post.text()).toBe("echo:héllo");
      expect(fb.calls).toHaveLength(0);
      expect(seen.map((r) => [r.method, r.headers["x-a"] ?? null, r.headers["content-length"] ?? null])).toEqual([
        ["GET", "1", null],
        ["POST", null, "6"],
      ]);
    } finally {
      client.close();
    }
  });

  test("a streamed body, a list of header pairs, a proxy setting, another scheme: handed to fetch, with a signal the canceller aborts", async () => {
    const fb = recordingFallback();
    const client = createUpstreamClient(fb.fetch, {});
    const canceller: Canceller = { cancel: null };
    const stream = new ReadableStream<Uint8Array>({ start: (c) => (c.enqueue(new Uint8Array([1])), c.close()) });
    expect((await client.fetch(url("/s"), { method: "POST", body: stream, duplex: "half", canceller } as UpstreamInit)).status).toBe(299);
    expect((await client.fetch(url("/p"), { method: "GET", headers: [["x-a", "1"]] })).status).toBe(299);
    expect((await client.fetch(new URL("ftp://127.0.0.1/x"), { method: "GET" })).status).toBe(299);
    const proxied = createUpstreamClient(fb.fetch, { HTTPS_PROXY: "http://127.0.0.1:9" });
    expect((await proxied.fetch(url("/q"), { method: "GET" })).status).toBe(299);
    expect(fb.calls).toHaveLength(4);
    const signal = fb.calls[0]!.init!.signal!;
    expect(signal.aborted).toBe(false);
    canceller.cancel!();
    expect(signal.aborted).toBe(true);
    client.close();
    proxied.close();
  });
});

describe("the canceller and refused fields", () => {
  test("cancel() while the answer is awaited: AbortError", async () => {
    const client = createUpstreamClient(recordingFallback().fetch, {});
    const canceller: Canceller = { cancel: null };
    try {
      const answer = client.fetch(new URL(`http://127.0.0.1:${silent.port}/never`), { method: "GET", canceller } as UpstreamInit);
      for (let i = 0; i < 200 && silentRequests === 0; i++) await Bun.sleep(5);
      expect(silentRequests).toBeGreaterThan(0);
      canceller.cancel!();
      const err = await answer.then(
        () => null,
        (e: unknown) => e as Error,
      );
      expect(err?.name).toBe("AbortError");
    } finally {
      client.close();
    }
  });

  test("a plain-object field whose value would end the line, or is not one byte per character, is refused: nothing is sent", async () => {
    const client = createUpstreamClient(recordingFallback().fetch, {});
    try {
      seen = [];
      for (const value of ["a\r\nx-injected: 1", "a\nb", "a\0b", "\u20ac"]) {
        await expect(client.fetch(url("/bad"), { method: "GET", headers: { "x-v": value } })).rejects.toThrow(TypeError);
      }
      await expect(client.fetch(url("/bad"), { method: "GET", headers: { "bad name": "v" } })).rejects.toThrow(TypeError);
      expect(seen).toHaveLength(0);
    } finally {
      client.close();
    }
  });
});
