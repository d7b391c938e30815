/**
 * The relay's own HTTP/1.1 client (src/gateway/proxy/http1.ts) against an upstream that writes raw bytes: the compiled
 * gateway proxies to a scripted TCP server, which records every request with the connection it came on. What is held:
 * - the request is what Bun's fetch sent (the same fields, the upstream token, obs-text bytes as they came);
 * - every framing RFC 9112 allows is read exactly (Content-Length, chunked with extensions and trailers, to the close,
 *   1xx before the answer, HEAD/204/304 without a body), a connection is reused only after an answer ended cleanly;
 * - every ambiguous or broken answer is a 502 or a cut body — never a wrong body — and its connection is never used
 *   again: the bytes an upstream sends past an answer (a smuggled second answer) never reach the next call;
 * - a reused connection found closed is retried for an idempotent call, never for a POST;
 * - TLS is verified: a self-signed upstream is refused.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createServer, type Server, type Socket } from "node:net";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { call, fullFlow } from "../helpers/agent.ts";
import { ATH_BIN, ensureBinary } from "../helpers/cli-binary.ts";
import { expectError } from "../helpers/expect-error.ts";
import { mailProvider, startWorld, type World } from "../helpers/world.ts";

interface Seen {
  conn: number;
  /** Which request on its connection (0: the first). */
  nth: number;
  method: string;
  path: string;
  head: string;
  body: Buffer;
}

/** How the scripted upstream answers a request (by its path's first segment): bytes to write, or writes of its own. */
type Script = (s: Socket, req: Seen) => void;

const scripts = new Map<string, Script>();
const seen: Seen[] = [];
let conns = 0;

function scriptedUpstream(): Promise<{ server: Server; url: string }> {
  return new Promise((resolve) => {
    const server = createServer((s) => {
      const conn = ++conns;
      let nth = 0;
      let buf = Buffer.alloc(0);
      s.on("error", () => undefined);
      s.on("data", (d: Buffer) => {
        buf = Buffer.concat([buf, d]);
        for (;;) {
          const end = buf.indexOf("\r\n\r\n");
          if (end < 0) return;
          const head = buf.toString("latin1", 0, end);
          const length = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? 0);
          if (buf.byteLength < end + 4 + length) return;
          const body = buf.subarray(end + 4, end + 4 + length);
          buf = buf.subarray(end + 4 + length);
          const [method, target] = head.split(" ") as [string, string];
          const req: Seen = { conn, nth: nth++, method, path: target, head, body: Buffer.from(body) };
          seen.push(req);
          const name = target.split("/")[1]!.split("?")[0]!;
          const script = scripts.get(name);
          if (script) script(s, req);
          else s.write(`HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n`);
        }
      });
    });
    server.listen(0, "127.0.0.1", () => resolve({ server, url: `http://127.0.0.1:${(server.address() as { port: number }).port}` }));
  });
}

/** A plain answer: `body` with its Content-Length, plus `extra` header lines. */
function plain(body: string, extra = ""): string {
  return `HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n${extra}Content-Length: ${Buffer.byteLength(body, "latin1")}\r\n\r\n${body}`;
}

scripts.set("plain", (s, req) => s.write(plain(`plain ${req.nth}`)));
scripts.set("echo", (s, req) => s.write(plain(req.body.toString("latin1"))));
scripts.set("chunked", (s) => s.write("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n7\r\n, world\r\n0\r\nX-Trailer: t\r\n\r\n"));
scripts.set("trickle", (s) => {
  // a chunked answer written a few bytes at a time, across many TCP segments
  const bytes = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + "a\r\n0123456789\r\n".repeat(20) + "0\r\n\r\n";
  let i = 0;
  const next = () => {
    if (i >= bytes.length) return;
    s.write(bytes.slice(i, i + 7));
    i += 7;
    setTimeout(next, 1);
  };
  next();
});
scripts.set("until-close", (s) => s.end("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nto the close"));
scripts.set("http10", (s) => s.write("HTTP/1.0 200 OK\r\nContent-Length: 4\r\n\r\nold!"));
scripts.set("interim", (s) => s.write("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n" + plain("after interim")));
scripts.set("no-content", (s) => s.write("HTTP/1.1 204 No Content\r\nContent-Length: 9\r\n\r\n"));
scripts.set("not-modified", (s) => s.write("HTTP/1.1 304 Not Modified\r\nContent-Length: 9\r\nETag: \"x\"\r\n\r\n"));
scripts.set("head", (s, req) => s.write(req.method === "HEAD" ? "HTTP/1.1 200 OK\r\nContent-Length: 12\r\n\r\n" : plain("head's body!")));
scripts.set("names", (s) => s.write("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConstructor: c\r\n__proto__: p\r\nX-Twice: 1\r\nx-twice: 2\r\nContent-Length: 2\r\n\r\nok"));
const HOP = "Connection: x-secret, keep-alive\r\nX-Secret: s\r\nKeep-Alive: timeout=5\r\nX-ATH-Upstream: false\r\nX-Forwarded-For: 10.0.0.1\r\nATH-Budget-Remaining: 99\r\n";
scripts.set("hop-fields", (s) => s.write(plain("filtered", `${HOP}Set-Cookie: a=1\r\n`)));
scripts.set("hop-fields-cookies", (s) => s.write(plain("filtered", `${HOP}Set-Cookie: a=1\r\nSet-Cookie: b=2\r\n`)));
scripts.set("obs-text", (s) => s.write(Buffer.from("HTTP/1.1 200 OK\r\nX-Name: caf\xe9\r\nContent-Length: 2\r\n\r\nok", "latin1")));
scripts.set("big", (s) => {
  const body = Buffer.alloc(4 * 1024 * 1024, "z");
  s.write(`HTTP/1.1 200 OK\r\nContent-Length: ${body.byteLength}\r\n\r\n`);
  s.write(body);
});
scripts.set("keep-alive-1", (s) => s.write(plain("short keep-alive", "Keep-Alive: timeout=1\r\n")));
// the broken and the ambiguous
scripts.set("smuggle", (s) => s.write(plain("first") + plain("SMUGGLED")));
scripts.set("late-bytes", (s) => {
  s.write(plain("on time"));
  setTimeout(() => s.write(plain("LATE")), 30);
});
scripts.set("te-and-cl", (s) => s.write("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n3\r\nabc\r\n0\r\n\r\n"));
scripts.set("two-lengths", (s) => s.write("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nabc"));
scripts.set("length-list", (s) => s.write("HTTP/1.1 200 OK\r\nContent-Length: 2, 2\r\n\r\nab"));
scripts.set("space-before-colon", (s) => s.write("HTTP/1.1 200 OK\r\nContent-Length : 2\r\n\r\nab"));
scripts.set("folded", (s) => s.write("HTTP/1.1 200 OK\r\nX-A: 1\r\n  continued\r\nContent-Length: 2\r\n\r\nab"));
scripts.set("bare-lf", (s) => s.write("HTTP/1.1 200 OK\nContent-Length: 2\n\nab"));
scripts.set("lf-inside", (s) => s.write("HTTP/1.1 200 OK\r\nX-A: 1\nContent-Length: 5\r\nContent-Length: 2\r\n\r\nab"));
scripts.set("gzip-te", (s) => s.write("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n"));
scripts.set("bad-chunk", (s) => s.write("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\nzz\r\nnope\r\n0\r\n\r\n"));
scripts.set("chunk-no-crlf", (s) => s.write("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabcd\r\n0\r\n\r\n"));
scripts.set("late-bad-chunk", (s) => {
  s.write("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n");
  setTimeout(() => s.write("zz\r\nnope\r\n0\r\n\r\n"), 50);
});
scripts.set("truncated", (s) => s.end("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly this"));
scripts.set("switch", (s) => s.write("HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n\r\n"));
scripts.set("huge-head", (s) => s.write(`HTTP/1.1 200 OK\r\n${"X-Pad: " + "p".repeat(1000) + "\r\n"}`.repeat(1) + `X-Big: ${"b".repeat(70 * 1024)}\r\nContent-Length: 2\r\n\r\nab`));
scripts.set("garbage", (s) => s.write("SSH-2.0-OpenSSH_9.2\r\n\r\n"));
// a connection the upstream closes under the next request sent on it (a keep-alive timeout racing the call)
scripts.set("stale", (s, req) => {
  if (req.nth === 0) s.write(plain("first on its connection"));
  else s.destroy();
});

let w: World;
let upstream: Awaited<ReturnType<typeof scriptedUpstream>>;
let token = "";

beforeAll(async () => {
  ensureBinary();
  upstream = await scriptedUpstream();
  w = await startWorld({
    binary: ATH_BIN,
    providers: (auth, api) => ({ raw: mailProvider(auth, api, { display_name: "Raw API", api_base_url: upstream.url }) }),
  });
  token = (await fullFlow(w.baseUrl, { provider_id: "raw", scopes: ["mail:read"] })).accessToken;
}, 120_000);
afterAll(async () => {
  await w?.stop();
  upstream?.server.close();
});

const auth = () => ({ authorization: `Bearer ${token}` });
const proxy = (path: string, init: Parameters<typeof call>[1] = {}) => call(`${w.baseUrl}/ath/proxy/raw/${path}`, { ...init, headers: { ...auth(), ...init.headers } });
/** The requests the upstream saw for `name`, in order. */
const requestsTo = (name: string) => seen.filter((r) => r.path.split("/")[1]!.split("?")[0] === name);
const last = (name: string) => requestsTo(name).at(-1)!;

describe("what the upstream is sent", () => {
  test("the fields fetch sent, the upstream token, the Host, and a Content-Length for a body — none of the agent's hop", async () => {
    const r = await proxy("echo/x?q=1", { method: "POST", body: "payload", headers: { "content-type": "text/plain", "x-custom": "v", cookie: "c=1" } });
    expect(r.status).toBe(200);
    expect(r.text).toBe("payload");
    const req = last("echo");
    const lines = req.head.split("\r\n");
    expect(lines[0]).toBe("POST /echo/x?q=1 HTTP/1.1");
    const fields = new Map(lines.slice(1).map((l) => [l.slice(0, l.indexOf(":")).toLowerCase(), l.slice(l.indexOf(":") + 1).trim()]));
    expect(fields.get("host")).toBe(new URL(upstream.url).host);
    expect(fields.get("content-length")).toBe("7");
    expect(fields.get("connection")).toBe("keep-alive");
    expect(fields.get("accept")).toBe("*/*");
    expect(fields.get("user-agent")).toStartWith("Bun/");
    expect(fields.get("x-custom")).toBe("v");
    expect(fields.get("authorization")).toMatch(/^Bearer \S+$/);
    expect(fields.get("authorization")).not.toBe(`Bearer ${token}`);
    expect(fields.has("cookie")).toBe(false);
    expect(fields.has("transfer-encoding")).toBe(false);
  });

  test("a Content-Length: 0 on a bodiless DELETE, none on a GET (as fetch sends them)", async () => {
    await proxy("plain", { method: "DELETE" });
    expect(last("plain").head).toMatch(/\r\ncontent-length: 0(\r\n|$)/i);
    await proxy("plain");
    expect(last("plain").head).not.toMatch(/content-length/i);
  });

  test("a header value's obs-text bytes reach the upstream as sent, both ways", async () => {
    const raw = await rawRequest(`GET /ath/proxy/raw/obs-text HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${token}\r\nX-Note: caf\xe9\r\nConnection: close\r\n\r\n`);
    expect(raw.toLowerCase()).toContain("x-name: caf\xe9");
    // an answer without a Content-Type gets none on its way (a buffered body would have the server add one)
    expect(raw.toLowerCase()).not.toContain("content-type");
    expect(last("obs-text").head).toContain("x-note: caf\xe9");
  });
});

describe("answers read exactly, connections reused only after a clean end", () => {
  test("Content-Length: consecutive calls share one connection", async () => {
    const a = await proxy("plain");
    const b = await proxy("plain");
    expect([a.status, b.status]).toEqual([200, 200]);
    const [ra, rb] = requestsTo("plain").slice(-2) as [Seen, Seen];
    expect(rb.conn).toBe(ra.conn);
    expect(b.text).toBe(`plain ${rb.nth}`);
  });

  test("chunked with extensions and trailers is decoded whole, and its connection reused", async () => {
    const r = await proxy("chunked");
    expect(r.text).toBe("hello, world");
    expect(r.headers.get("transfer-encoding")).toBeNull();
    const p = await proxy("plain");
    expect(last("plain").conn).toBe(last("chunked").conn);
    expect(p.text).toBe(`plain ${last("plain").nth}`);
  });

  test("a chunked answer trickling in 7-byte writes arrives whole", async () => {
    const r = await proxy("trickle");
    expect(r.text).toBe("0123456789".repeat(20));
  });

  test("an answer delimited by the close arrives whole; its connection is not reused", async () => {
    const r = await proxy("until-close");
    expect(r.text).toBe("to the close");
    await proxy("plain");
    expect(last("plain").conn).not.toBe(last("until-close").conn);
  });

  test("an HTTP/1.0 answer is read; its connection is not reused", async () => {
    expect((await proxy("http10")).text).toBe("old!");
    await proxy("plain");
    expect(last("plain").conn).not.toBe(last("http10").conn);
  });

  test("field names are data: `constructor` and `__proto__` pass as fields, a repeated field is joined", async () => {
    const r = await proxy("names");
    expect(r.text).toBe("ok");
    expect(r.headers.get("constructor")).toBe("c");
    expect(r.headers.get("__proto__")).toBe("p");
    expect(r.headers.get("x-twice")).toBe("1, 2");
  });

  for (const name of ["hop-fields", "hop-fields-cookies"]) {
    test(`${name}: the agent sees none of the upstream's hop, cookie, forwarding, ATH or budget fields, and X-ATH-Upstream: true`, async () => {
      const r = await proxy(name);
      expect(r.text).toBe("filtered");
      for (const f of ["connection", "x-secret", "keep-alive", "x-forwarded-for", "set-cookie", "ath-budget-remaining"]) expect(r.headers.get(f)).toBeNull();
      expect(r.headers.get("x-ath-upstream")).toBe("true");
      expect(r.headers.get("content-type")).toBe("text/plain");
    });
  }

  test("1xx answers before the real one are dropped", async () => {
    const r = await proxy("interim");
    expect(r.status).toBe(200);
    expect(r.text).toBe("after interim");
  });

  test("HEAD, 204 and 304 have no body whatever their Content-Length says, and the connection goes on", async () => {
    const head = await call(`${w.baseUrl}/ath/proxy/raw/head`, { method: "HEAD", headers: auth() });
    expect(head.status).toBe(200);
    expect(head.text).toBe("");
    expect((await proxy("head")).text).toBe("head's body!");
    expect(last("head").conn).toBe(requestsTo("head").at(-2)!.conn);
    expect((await proxy("no-content")).status).toBe(204);
    expect((await proxy("not-modified")).status).toBe(304);
    const p = await proxy("plain");
    expect(last("plain").conn).toBe(last("not-modified").conn);
    expect(p.text).toBe(`plain ${last("plain").nth}`);
  });

  test("a 4 MiB answer arrives byte for byte", async () => {
    const res = await fetch(`${w.baseUrl}/ath/proxy/raw/big`, { headers: auth() });
    const body = Buffer.from(await res.arrayBuffer());
    expect(body.byteLength).toBe(4 * 1024 * 1024);
    expect(body.every((b) => b === 122)).toBe(true);
  });

  test("Keep-Alive: timeout=1 — the connection is not reused a second later", async () => {
    await proxy("keep-alive-1");
    await Bun.sleep(50);
    await proxy("plain");
    expect(last("plain").conn).not.toBe(last("keep-alive-1").conn);
  });
});

describe("ambiguous or broken answers: a 502 or a cut body, never a wrong body, never the connection again", () => {
  test("bytes past an answer's end (a second, smuggled answer) never reach the next call", async () => {
    const first = await proxy("smuggle");
    expect(first.text).toBe("first");
    for (let i = 0; i < 3; i++) {
      const next = await proxy("plain");
      expect(next.text).not.toContain("SMUGGLED");
      expect(next.text).toBe(`plain ${last("plain").nth}`);
      expect(last("plain").conn).not.toBe(last("smuggle").conn);
    }
  });

  test("bytes arriving on an idle connection close it", async () => {
    expect((await proxy("late-bytes")).text).toBe("on time");
    await Bun.sleep(100);
    const next = await proxy("plain");
    expect(next.text).toBe(`plain ${last("plain").nth}`);
    expect(last("plain").conn).not.toBe(last("late-bytes").conn);
  });

  // (bad-chunk, chunk-no-crlf: the whole broken answer in one write is found broken before the answer is handed over)
  for (const name of ["te-and-cl", "two-lengths", "length-list", "space-before-colon", "folded", "bare-lf", "lf-inside", "gzip-te", "switch", "huge-head", "garbage", "bad-chunk", "chunk-no-crlf"]) {
    test(`${name}: 502 UPSTREAM_UNAVAILABLE, and the next call has a connection of its own`, async () => {
      const r = await proxy(name);
      expectError(r, "UPSTREAM_UNAVAILABLE");
      const next = await proxy("plain");
      expect(next.text).toBe(`plain ${last("plain").nth}`);
      expect(last("plain").conn).not.toBe(last(name).conn);
    });
  }

  for (const name of ["truncated", "late-bad-chunk"]) {
    test(`${name}: the body already on its way is cut — the agent's read fails, it never looks complete`, async () => {
      const res = await fetch(`${w.baseUrl}/ath/proxy/raw/${name}`, { headers: auth() });
      expect(res.status).toBe(200);
      const read = await res.text().then(
        (text) => ({ ok: true, text }),
        () => ({ ok: false, text: "" }),
      );
      expect(read.ok).toBe(false);
      const next = await proxy("plain");
      expect(next.text).toBe(`plain ${last("plain").nth}`);
      expect(last("plain").conn).not.toBe(last(name).conn);
    });
  }
});

describe("a reused connection found closed", () => {
  test("a GET is sent once more on a fresh connection and answered", async () => {
    expect((await proxy("stale")).text).toBe("first on its connection");
    const r = await proxy("stale");
    expect(r.text).toBe("first on its connection");
    const [a, b, c] = requestsTo("stale").slice(-3) as [Seen, Seen, Seen];
    expect(b.conn).toBe(a.conn); // reused, closed under it…
    expect(c.conn).not.toBe(a.conn); // …and sent again on a new one
    expect(c.nth).toBe(0);
  });

  test("a POST is not repeated: 502", async () => {
    // (a GET first: on whichever connection, the one left idle has served one request)
    expect((await proxy("stale")).text).toBe("first on its connection");
    const before = requestsTo("stale").length;
    const r = await proxy("stale", { method: "POST", body: "x" });
    expectError(r, "UPSTREAM_UNAVAILABLE");
    expect(requestsTo("stale").length).toBe(before + 1);
  });
});

describe("TLS", () => {
  test("an upstream whose certificate no CA vouches for is refused (502), never spoken to", async () => {
    const dir = mkdtempSync(join(tmpdir(), "ath-tls-"));
    try {
      const made = Bun.spawnSync(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-keyout", join(dir, "key.pem"), "-out", join(dir, "cert.pem"), "-days", "1", "-nodes", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"]);
      expect(made.exitCode).toBe(0);
      let spoken = 0;
      const server = Bun.serve({ port: 0, hostname: "127.0.0.1", tls: { cert: Bun.file(join(dir, "cert.pem")), key: Bun.file(join(dir, "key.pem")) }, fetch: () => (spoken++, new Response("secret")) });
      try {
        const gw = await startWorld({
          binary: ATH_BIN,
          providers: (a, api) => ({ tls: mailProvider(a, api, { display_name: "TLS API", api_base_url: `https://127.0.0.1:${server.port}` }) }),
        });
        try {
          const t = (await fullFlow(gw.baseUrl, { provider_id: "tls", scopes: ["mail:read"] })).accessToken;
          const r = await call(`${gw.baseUrl}/ath/proxy/tls/x`, { headers: { authorization: `Bearer ${t}` } });
          expectError(r, "UPSTREAM_UNAVAILABLE");
          expect(spoken).toBe(0);
        } finally {
          await gw.stop();
        }
      } finally {
        server.stop(true);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});

/** Sends raw bytes to the gateway and returns everything it answers (latin1). */
function rawRequest(bytes: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = Bun.connect({
      hostname: "127.0.0.1",
      port: w.gw.port,
      socket: {
        open: (s) => void s.write(Buffer.from(bytes, "latin1")),
        data: (_s, d) => void (text += d.toString("latin1")),
        close: () => resolve(text),
        error: (_s, e) => reject(e),
      },
    });
    let text = "";
    socket.catch(reject);
  });
}
