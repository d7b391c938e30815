/**
 * What only a real HTTP stack shows about the proxy, for both of its mounts — `/ath/proxy/{provider_id}` in gateway
 * mode and `/api` in native mode (DESIGN §7): request-targets `fetch` would normalise (dot segments, backslashes,
 * encoded separators, `//host`), request smuggling, and raw targets the router cannot place. Every refused request is
 * checked to have never reached the upstream API (nor the canary, a host no request may ever reach).
 */
import { describe, expect, test } from "bun:test";
import { connect } from "node:net";
import { expectError } from "./expect-error.ts";
import { rawRequest } from "./raw-http.ts";

export interface WireMount {
  /** The proxy mount for this provider: `/ath/proxy/mail`, `/api`. */
  prefix: string;
  token: string;
}

export interface WireContext {
  port: number;
  upstreamRequests(): { path: string }[];
  canaryHits: string[];
  canaryPort: number;
  /** A provider whose api_base_url has no path. */
  plain: WireMount;
  /** A provider whose api_base_url has a path prefix (`apiPrefix`), if the world has one. */
  prefixed?: WireMount & { apiPrefix: string };
}

export function proxyWireSuite(ctx: () => WireContext): void {
  /** Runs `fn` and asserts the upstream API (and the canary) received nothing meanwhile. */
  async function upstreamUntouched<T>(fn: () => Promise<T>): Promise<T> {
    const c = ctx();
    const before = c.upstreamRequests().length;
    const canaryBefore = c.canaryHits.length;
    const result = await fn();
    expect(c.upstreamRequests().slice(before)).toEqual([]);
    expect(c.canaryHits.length).toBe(canaryBefore);
    return result;
  }

  describe("Proxy — path traversal", () => {
    // Bun.serve resolves dot segments (also %2e%2e) and turns `\` into `/` in the request-target before any handler
    // runs; what still reaches the gateway undecoded are encoded separators, which it must refuse itself.
    test("encoded traversals reach the gateway undecoded and are refused with 400 INVALID_REQUEST, nothing forwarded", async () => {
      const c = ctx();
      const mounts = [c.plain, ...(c.prefixed ? [c.prefixed] : [])];
      const targets: [WireMount, string][] = [
        [c.plain, "/v1/..%2f..%2fadmin"],
        [c.plain, "/v1/%2e%2e%2fsecret"],
        [c.plain, "/v1/%2E%2E%2Fsecret"],
        [c.plain, "/v1/%5c..%5cx"],
        [c.plain, "/v1/..%5cx"],
        ...mounts.flatMap((m): [WireMount, string][] => [[m, "/..%2fmessages"], [m, "/%2e%2e%2f%2e%2e%2fadmin"]]),
      ];
      for (const [mount, rest] of targets) {
        const r = await upstreamUntouched(() => rawRequest(c.port, "GET", mount.prefix + rest, { authorization: `Bearer ${mount.token}` }));
        expectError({ status: r.status, text: r.body, headers: r.headers }, "INVALID_REQUEST", { field: "path" });
      }
    });

    test("dot segments and backslashes never take a request outside the mount (nor outside api_base_url's prefix)", async () => {
      const c = ctx();
      for (const mount of [c.plain, ...(c.prefixed ? [c.prefixed] : [])]) {
        const targets = ["/../messages", "/%2e%2e/messages", "/%2E%2E/%2E%2E/ath/admin/providers", "/echo/../../../x", "/echo\\..\\..\\x"];
        for (const rest of targets) {
          const before = c.upstreamRequests().length;
          const canaryBefore = c.canaryHits.length;
          const r = await rawRequest(c.port, "GET", mount.prefix + rest, { authorization: `Bearer ${mount.token}` });
          expect(c.canaryHits.length).toBe(canaryBefore);
          const forwarded = c.upstreamRequests().slice(before);
          if (r.status >= 400 && r.status < 500) {
            expect(forwarded).toEqual([]);
            expect(typeof JSON.parse(r.body).code).toBe("string");
          } else {
            // forwarded: once, and only under the provider's prefix
            expect(forwarded).toHaveLength(1);
            if (mount === c.prefixed) expect(forwarded[0]!.path.startsWith(c.prefixed.apiPrefix)).toBe(true);
          }
        }
      }
    });

    test("//host in the path never leaves api_base_url's origin", async () => {
      const c = ctx();
      const host = `127.0.0.1:${c.canaryPort}`;
      for (const rest of [`//${host}/x`, `/%2f%2f${host}/x`, `/http://${host}/x`]) {
        const canaryBefore = c.canaryHits.length;
        const before = c.upstreamRequests().length;
        const r = await rawRequest(c.port, "GET", c.plain.prefix + rest, { authorization: `Bearer ${c.plain.token}` });
        expect(c.canaryHits.length).toBe(canaryBefore);
        if (r.status >= 400 && r.status < 500) {
          expect(typeof JSON.parse(r.body).code).toBe("string");
          expect(c.upstreamRequests().length).toBe(before);
        } else {
          // forwarded: then only to the upstream API itself
          expect(c.upstreamRequests().length).toBe(before + 1);
        }
      }
    });
  });

  describe("Proxy — request framing", () => {
    /** Writes `request` verbatim on a new connection and returns the status line of the answer. */
    function rawStatusLine(request: string): Promise<string> {
      return new Promise((resolve, reject) => {
        const socket = connect(ctx().port, "127.0.0.1");
        let out = "";
        socket.on("connect", () => socket.write(request));
        socket.on("data", (c: Buffer) => (out += c.toString("latin1")));
        socket.on("error", reject);
        socket.on("end", () => resolve(out.split("\r\n")[0] ?? ""));
      });
    }

    test("conflicting Content-Length/Transfer-Encoding and bare CR or LF in a header are refused before anything is forwarded", async () => {
      const c = ctx();
      const auth = `Authorization: Bearer ${c.plain.token}`;
      const echo = `${c.plain.prefix}/v1/echo`;
      const before = c.upstreamRequests().length;
      const smuggled = [
        `POST ${echo} HTTP/1.1\r\nHost: x\r\n${auth}\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n0\r\n\r\nGET ${echo}?smuggled HTTP/1.1\r\nHost: x\r\n\r\n`,
        `GET ${echo} HTTP/1.1\r\nHost: x\r\n${auth}\r\nX-Split: a\nX-Injected: 1\r\nConnection: close\r\n\r\n`,
        `GET ${echo} HTTP/1.1\r\nHost: x\r\n${auth}\r\nX-Split: a\rX-Injected: 1\r\nConnection: close\r\n\r\n`,
      ];
      for (const request of smuggled) expect(await rawStatusLine(request)).toStartWith("HTTP/1.1 400");
      expect(c.upstreamRequests().slice(before)).toEqual([]);
    });

    test("raw request-targets the router cannot place answer JSON 4xx errors", async () => {
      const c = ctx();
      for (const target of ["//127.0.0.1:1/x", "/ath/%zz", "/ath/agents/register%00", `${c.plain.prefix}/%zz`, `${c.plain.prefix}/x%00`]) {
        const r = await rawRequest(c.port, "GET", target);
        expect(r.status).toBeGreaterThanOrEqual(400);
        expect(r.status).toBeLessThan(500);
        expect(r.body).not.toMatch(/\n\s+at |\.ts:\d+/);
      }
    });
  });
}
