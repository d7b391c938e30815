/**
 * A latency instrument beside wrk's: one HTTP/1.1 keep-alive connection over Bun.connect, the next request written the
 * moment the last answer's last byte arrived, every request's time kept (not a histogram's bucket), for `seconds`.
 * Prints one JSON line: the count and percentiles in ms (scripts/bench/wrk.ts runs it; it is not a general client:
 * Content-Length answers only, and the answer's status must be the shape's).
 *
 * Usage: bun scripts/bench/loop-client.ts URL TOKEN METHOD SECONDS [BODY]
 */
export {};
const [url, token, method, secondsText, body = ""] = process.argv.slice(2) as [string, string, string, string, string?];
const u = new URL(url);
const seconds = Number(secondsText);
const head =
  `${method} ${u.pathname}${u.search} HTTP/1.1\r\nHost: ${u.host}\r\nAuthorization: Bearer ${token}\r\n` +
  (method === "POST" ? `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` : "") +
  "\r\n";
const request = Buffer.from(head + (method === "POST" ? body : ""));
const expected = method === "POST" ? 201 : 200;

const times: number[] = [];
let buffered = Buffer.alloc(0);
let sentAt = 0;
let end = 0;
let done: (() => void) | undefined;
const finished = new Promise<void>((r) => (done = r));

function send(s: { write(b: Uint8Array): number }): void {
  sentAt = performance.now();
  s.write(request);
}

/** The answer's end in `b`, or -1 while incomplete. */
function answerEnd(b: Buffer): number {
  const h = b.indexOf("\r\n\r\n");
  if (h < 0) return -1;
  const headText = b.subarray(0, h).toString("latin1");
  const status = Number(headText.slice(9, 12));
  if (status !== expected) throw new Error(`status ${status}`);
  const m = /\r\ncontent-length:\s*(\d+)/i.exec(headText);
  if (!m) throw new Error("no Content-Length in the answer");
  const total = h + 4 + Number(m[1]);
  return b.length >= total ? total : -1;
}

await Bun.connect({
  hostname: u.hostname,
  port: Number(u.port),
  socket: {
    open(s) {
      end = performance.now() + seconds * 1000;
      send(s);
    },
    data(s, chunk) {
      buffered = buffered.length === 0 ? Buffer.from(chunk) : Buffer.concat([buffered, chunk]);
      const at = answerEnd(buffered);
      if (at < 0) return;
      const now = performance.now();
      times.push(now - sentAt);
      buffered = buffered.subarray(at);
      if (now >= end) {
        s.end();
        done!();
      } else send(s);
    },
    close() {
      done!();
    },
    error(_s, e) {
      console.error(String(e));
      process.exit(1);
    },
  },
});
await finished;
const sorted = [...times].sort((a, b) => a - b);
const pct = (p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
console.log(JSON.stringify({ n: times.length, p50: pct(50), p99: pct(99), p999: pct(99.9) }));
