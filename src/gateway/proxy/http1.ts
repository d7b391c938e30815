/**
 * The relay's upstream client (issue 41): HTTP/1.1 over the runtime's own sockets (`Bun.connect`), keep-alive, one
 * request at a time per connection — in place of `fetch`, whose hand-off to its own thread was the largest single cost
 * left in a proxied call (docs/performance.md). It speaks the subset a relayed call needs and hands everything else to
 * `fetch` unchanged (`fallback`): a streamed request body, an `HTTP(S)_PROXY` in the environment, a URL that is not
 * http(s).
 *
 * Framing is where a client like this one can hurt: an answer read one byte short or long hands the rest of the
 * connection — another agent's answer — to the next call (response desynchronization). So the framing rules are
 * RFC 9112's, read strictly, in this one file, and a connection is reused only when an answer ended exactly where its
 * framing said, nothing followed it, and the upstream asked for nothing else:
 * - the header section: CRLF lines only, names that are tokens (no space before the colon), no folded lines, at most
 *   64 KiB; a status line `HTTP/1.x SSS`;
 * - the body: none for HEAD, 1xx, 204 and 304 (RFC 9112 §6.3 ¶1–2); `Transfer-Encoding: chunked` (and nothing else)
 *   decoded, with trailers read and dropped; a Content-Length of digits only (repeated: the same value); neither: the
 *   body runs to the connection's close, which is then not reused; both, or another transfer coding: refused (§6.3 ¶3
 *   calls it a possible smuggling attempt), the connection closed;
 * - a 1xx answer before the real one is read and dropped (a 101 is refused: the relay never asks to upgrade);
 * - bytes after an answer, or arriving on an idle connection, close it; so does `Connection: close`, an HTTP/1.0
 *   answer, an unfinished request body, a cancelled answer body.
 * An idle connection is reused for at most 4 s (or the upstream's `Keep-Alive: timeout` less one second). When a reused
 * connection closes before a byte of the answer, an idempotent call (RFC 9110 §9.2.2) is sent once more on a fresh
 * one; any other fails (502): it may have been received.
 *
 * What it sends is what `fetch` sent (tests/e2e/upstream-framing.test.ts holds the two alike): the caller's headers,
 * then `Connection: keep-alive`, `User-Agent` and `Accept: *\/*` when the caller set none, `Host`, and a Content-Length
 * (0 for a bodiless request other than GET and HEAD). TLS is the runtime's (its CA store, certificates verified, SNI). A failure to connect carries the code
 * `fetch` gives (`ECONNREFUSED`…), so the relay tells "never sent" the same way; a status a `Response` cannot carry
 * (outside 200–599) rejects with code `ERR_UPSTREAM_STATUS` and the status. A call is cut short through its
 * `Canceller` (the relay's deadline), not an `AbortSignal`: a signal and its listener per call cost ≈ 2 µs of a
 * proxied call's ≈ 40 (issue 41's profile); cut, the call rejects with `AbortError` and its connection is closed.
 */
import type { Socket, SocketHandler } from "bun";
import type { Fetch } from "../context.ts";

/** The largest header section read (an answer's status line and fields). */
const MAX_HEAD_BYTES = 64 * 1024;
/** The longest an idle connection is kept for reuse when the upstream did not say (`Keep-Alive: timeout=N`). */
const IDLE_REUSE_MS = 4_000;
/** Idle connections kept per origin; more are closed. */
const MAX_IDLE_PER_ORIGIN = 256;
/** A streamed answer body is read ahead at most this far before the socket is paused. */
const READ_AHEAD_BYTES = 256 * 1024;

/** Methods a retry on a fresh connection may repeat (RFC 9110 §9.2.2: idempotent). */
const IDEMPOTENT = new Set(["GET", "HEAD", "OPTIONS", "PUT", "DELETE", "TRACE"]);
/** RFC 9110 §5.6.2 token. */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** What no field line may hold (it would end the line, or a C string). */
const LINE_BREAK = /[\r\n\0]/;
/** What a request's field value may not hold: a line break, a NUL, a character that is not one byte. */
const NOT_A_FIELD_VALUE = /[\r\n\0]|[^\x00-\xff]/;
const STATUS_LINE = /^HTTP\/1\.([01]) (\d{3})(?: (.*))?$/;
/** In a header section: a CR not before an LF, an LF not after a CR, a NUL (no lookbehind: JavaScriptCore interprets those). */
const BARE_CR_LF_NUL = /\r(?:[^\n]|$)|(?:^|[^\r])\n|\0/;
const DIGITS = /^\d{1,15}$/;
/** A chunk's size (hex, at most 12 digits) and any extensions, which are ignored. */
const CHUNK_SIZE = /^([0-9a-fA-F]{1,12})[ \t]*(?:;.*)?$/;
const KEEP_ALIVE_TIMEOUT = /(?:^|,)\s*timeout=(\d+)/i;
const CRLF_CRLF = Buffer.from("\r\n\r\n");
const USER_AGENT = typeof navigator !== "undefined" && navigator.userAgent ? navigator.userAgent : `Bun/${Bun.version}`;

/** What a caller holds to cut its call short while the answer's headers are awaited: the client sets `cancel`. */
export interface Canceller {
  cancel: (() => void) | null;
}

/**
 * What the caller would do to an answer's header fields (the proxy's rules, headers.ts AGENT_ANSWER), done by the client
 * while it parses them: `filter` on the fields (lower-case names, repeated fields joined) before the Response is made,
 * `made` on that Response. An answer the client cannot hand to `filter` (Set-Cookie repeated; `fetch`'s) gets neither,
 * and its caller filters it as usual.
 */
export interface AnswerFields {
  filter(fields: Record<string, string>): void;
  made(res: Response): void;
}

/** The relay's request options: fetch's, with the call's canceller in place of a signal, and the answer's field rules. */
export type UpstreamInit = RequestInit & { decompress?: boolean; duplex?: "half"; canceller?: Canceller; answer?: AnswerFields };

export interface UpstreamClient {
  fetch: Fetch;
  /** Closes the idle connections (a gateway's close). */
  close(): void;
}

/**
 * `fetch` made to honour `UpstreamInit.canceller` (a signal of its own per call): what the relay calls when it is not
 * this file's client — an injected fetch (in-process tests), and what the client hands to fetch.
 */
export function cancellable(fetch: Fetch): Fetch {
  return (input, init) => {
    const canceller = (init as UpstreamInit | undefined)?.canceller;
    if (canceller === undefined) return fetch(input, init);
    const controller = new AbortController();
    canceller.cancel = () => controller.abort();
    return fetch(input, { ...init, signal: controller.signal });
  };
}

/**
 * The client, with `fallback` (the runtime's fetch) for what it does not speak. Proxy settings are read once: when
 * any is set, every call goes to `fallback`, which honours them.
 */
export function createUpstreamClient(fallback: Fetch, env: Record<string, string | undefined> = process.env): UpstreamClient {
  const proxied = ["HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"].some((k) => !!env[k]);
  const other = cancellable(fallback);
  const pool = new Pool();
  const fetch: Fetch = (input, init) => {
    const o = init as UpstreamInit | undefined;
    // (headers: the relay's Headers or plain object — a list of pairs goes to fetch)
    if (proxied || !(input instanceof URL) || o === undefined || o.signal || Array.isArray(o.headers)) return other(input, init);
    const body = o.body;
    if (body !== null && body !== undefined && !(body instanceof Uint8Array) && !(body instanceof ArrayBuffer)) return other(input, init);
    if (input.protocol !== "http:" && input.protocol !== "https:") return other(input, init);
    return send(pool, input, o.method ?? "GET", o.headers as Headers | Record<string, string> | undefined, body ?? null, o.canceller ?? null, o.answer ?? null);
  };
  return { fetch, close: () => pool.closeAll() };
}

// internal

/** An error with the code the relay reads (the codes Bun's fetch gives). */
function codedError(message: string, code: string, extra?: Record<string, unknown>): Error {
  return Object.assign(new Error(message), { code }, extra);
}

function abortError(): Error {
  return new DOMException("The operation was aborted.", "AbortError");
}

/** A field line's value from `from`: without the spaces and tabs around it (RFC 9112 §5: OWS), nothing else trimmed. */
function fieldValue(line: string, from: number): string {
  let start = from;
  let end = line.length;
  while (start < end && (line.charCodeAt(start) === 32 || line.charCodeAt(start) === 9)) start++;
  while (end > start && (line.charCodeAt(end - 1) === 32 || line.charCodeAt(end - 1) === 9)) end--;
  return line.slice(start, end);
}

function framing(reason: string): Error {
  return codedError(`The upstream's answer is not valid HTTP/1.1 (${reason})`, "ERR_UPSTREAM_FRAMING");
}

/** Connections per origin: idle ones kept for reuse, last in first out. */
class Pool {
  private readonly idle = new Map<string, Conn[]>();
  private sweeper: ReturnType<typeof setInterval> | null = null;

  /** An idle connection still fit for reuse, or null. */
  take(origin: string, now: number): Conn | null {
    const list = this.idle.get(origin);
    if (list === undefined) return null;
    let conn: Conn | undefined;
    while ((conn = list.pop()) !== undefined) {
      if (!conn.dead && now - conn.idleSince < conn.reuseMs) return conn;
      conn.destroy();
    }
    return null;
  }

  give(conn: Conn, now: number): void {
    let list = this.idle.get(conn.origin);
    if (list === undefined) this.idle.set(conn.origin, (list = []));
    if (list.length >= MAX_IDLE_PER_ORIGIN) return conn.destroy();
    conn.idleSince = now;
    list.push(conn);
    if (this.sweeper === null) {
      this.sweeper = setInterval(() => this.sweep(), 1_000);
      this.sweeper.unref();
    }
  }

  closeAll(): void {
    for (const list of this.idle.values()) for (const c of list) c.destroy();
    this.idle.clear();
    if (this.sweeper !== null) clearInterval(this.sweeper);
    this.sweeper = null;
  }

  /** Idle connections past their reuse time are closed (so they hold no descriptor), dead ones dropped. */
  private sweep(): void {
    const now = performance.now();
    for (const [origin, list] of this.idle) {
      const kept = list.filter((c) => {
        if (!c.dead && now - c.idleSince < c.reuseMs) return true;
        c.destroy();
        return false;
      });
      if (kept.length === 0) this.idle.delete(origin);
      else this.idle.set(origin, kept);
    }
    if (this.idle.size === 0 && this.sweeper !== null) {
      clearInterval(this.sweeper);
      this.sweeper = null;
    }
  }
}

/** Sends one call: on a pooled connection when one is fit, else a new one; once more on a fresh one when a reused one was stale. */
function send(
  pool: Pool,
  url: URL,
  method: string,
  headers: Headers | Record<string, string> | undefined,
  body: Uint8Array | ArrayBuffer | null,
  canceller: Canceller | null,
  answer: AnswerFields | null,
): Promise<Response> {
  let head: string;
  try {
    // (as fetch: a Content-Length on every request but a bodiless GET or HEAD — 0 for one without a body)
    head = requestHead(url, method, headers, body !== null ? body.byteLength : method === "GET" || method === "HEAD" ? -1 : 0);
  } catch (err) {
    return Promise.reject(err);
  }
  const ex = new Exchange(url, method, head, body === null ? null : body instanceof Uint8Array ? body : new Uint8Array(body), pool, answer);
  if (canceller !== null) canceller.cancel = () => ex.cancel();
  ex.start(pool.take(ex.origin, performance.now()));
  return ex.answer;
}

/** The request line and header section, as fetch wrote them. */
function requestHead(url: URL, method: string, headers: Headers | Record<string, string> | undefined, length: number): string {
  if (!TOKEN.test(method)) throw new TypeError(`Invalid HTTP method: ${method}`);
  let head = `${method} ${url.pathname}${url.search} HTTP/1.1\r\n`;
  let agent = false;
  let accept = false;
  if (headers instanceof Headers) {
    // the runtime's Headers have checked names and values already
    headers.forEach((value, name) => {
      if (name === "user-agent") agent = true;
      else if (name === "accept") accept = true;
      head += `${name}: ${value}\r\n`;
    });
  } else if (headers !== undefined) {
    for (const name in headers) {
      const value = headers[name]!;
      if (!TOKEN.test(name) || NOT_A_FIELD_VALUE.test(value)) throw new TypeError(`Invalid header: ${name}`);
      const lower = name.toLowerCase();
      if (lower === "user-agent") agent = true;
      else if (lower === "accept") accept = true;
      head += `${name}: ${value}\r\n`;
    }
  }
  head += "Connection: keep-alive\r\n";
  if (!agent) head += `User-Agent: ${USER_AGENT}\r\n`;
  if (!accept) head += "Accept: */*\r\n";
  head += `Host: ${url.host}\r\n`;
  if (length >= 0) head += `Content-Length: ${length}\r\n`;
  return head + "\r\n";
}

function connect(url: URL, conn: Conn): Promise<unknown> {
  const host = url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname;
  const port = url.port === "" ? (url.protocol === "https:" ? 443 : 80) : Number(url.port);
  const options = { hostname: host, port, data: conn, socket: HANDLERS };
  return url.protocol === "https:" ? Bun.connect<Conn>({ ...options, tls: { serverName: host } }) : Bun.connect<Conn>(options);
}

const HANDLERS: SocketHandler<Conn> = {
  open(socket) {
    socket.data.opened(socket, false);
  },
  // TLS: the request waits for the handshake (bytes written before it are lost); a certificate the runtime's CA store
  // does not vouch for fails the call (the runtime then closes the connection, rejectUnauthorized being its default)
  handshake(socket, success, authorizationError) {
    if (success) socket.data.opened(socket, true);
    else socket.data.closed(authorizationError ?? codedError("TLS handshake failed", "ERR_TLS_HANDSHAKE"));
  },
  data(socket, data) {
    socket.data.received(data);
  },
  drain(socket) {
    socket.data.drained();
  },
  close(socket, error) {
    socket.data.closed(error);
  },
  end(socket) {
    socket.data.closed(undefined);
  },
  error(socket, error) {
    socket.data.closed(error);
  },
  connectError(socket, error) {
    socket.data.closed(error);
  },
};

/** One request and its answer, on one connection or — a reused one proving stale — on a fresh second. */
class Exchange {
  readonly answer: Promise<Response>;
  resolve!: (r: Response) => void;
  private reject!: (e: unknown) => void;
  settled = false;
  readonly origin: string;
  /** The request's bytes: its header section and body, as one write. */
  readonly bytes: Uint8Array;
  conn: Conn | null = null;
  /** A retry on a fresh connection is allowed: the connection in use was reused and the method is idempotent. */
  retriable = false;
  constructor(
    readonly url: URL,
    readonly method: string,
    head: string,
    body: Uint8Array | null,
    private readonly pool: Pool,
    readonly fields: AnswerFields | null,
  ) {
    this.origin = url.origin;
    this.answer = new Promise<Response>((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
    // one buffer, every byte of it written (the head's characters are bytes: requestHead refuses any above 0xFF)
    const length = head.length + (body === null ? 0 : body.byteLength);
    const bytes = Buffer.allocUnsafe(length);
    bytes.write(head, 0, "latin1");
    if (body !== null) bytes.set(body, head.length);
    this.bytes = bytes;
  }

  /** On `reused` when given, else on a new connection. */
  start(reused: Conn | null): void {
    if (reused !== null) {
      this.retriable = IDEMPOTENT.has(this.method);
      reused.begin(this);
      return;
    }
    this.retriable = false;
    const conn = new Conn(this.origin, this.pool, this.url.protocol === "https:");
    conn.begin(this);
    connect(this.url, conn).catch((err: unknown) => conn.closed(err as Error));
  }

  /** The reused connection was stale (closed before a byte of the answer): once more, on a fresh one. */
  again(): void {
    this.start(null);
  }

  done(res: Response): void {
    if (this.settled) return;
    this.settled = true;
    this.resolve(res);
  }

  fail(err: unknown): void {
    if (this.settled) return;
    this.settled = true;
    this.reject(err);
  }

  /** The caller's deadline: the answer is not awaited any longer. */
  cancel(): void {
    if (this.settled) return;
    const conn = this.conn;
    if (conn !== null) conn.cut(this, abortError());
    else this.fail(abortError());
  }
}

/** Where an answer is in its reading. */
const enum Phase {
  Head,
  /** Content-Length: `left` bytes to come. */
  Length,
  /** Chunked: a chunk's size line next. */
  ChunkSize,
  /** Chunked: `left` bytes of a chunk's data, then its CRLF. */
  ChunkData,
  ChunkDataEnd,
  /** Chunked: trailer lines, up to an empty one. */
  Trailers,
  /** To the connection's close. */
  UntilClose,
  Done,
}

/** One connection to an origin and the answer being read on it. */
class Conn {
  socket: Socket<Conn> | null = null;
  dead = false;
  /** performance.now() when it went idle. */
  idleSince = 0;
  reuseMs = IDLE_REUSE_MS;
  private ex: Exchange | null = null;
  private phase = Phase.Done;
  /** Bytes read and not yet consumed: `buf` from `pos`. */
  private buf: Buffer | null = null;
  private pos = 0;
  /** Any byte of the current answer seen. */
  private seen = false;
  private left = 0;
  private reusable = true;
  /** Request bytes not yet taken by the socket (written once it opens, or drains). */
  private pending: Uint8Array | null = null;
  private stream: ReadableStreamDefaultController<Uint8Array> | null = null;
  private paused = false;
  constructor(
    readonly origin: string,
    private readonly pool: Pool,
    private readonly tls: boolean,
  ) {}

  /** Sends the exchange's request (now, or once the connection opens) and reads its answer. */
  begin(ex: Exchange): void {
    this.ex = ex;
    ex.conn = this;
    this.phase = Phase.Head;
    this.seen = false;
    this.reusable = true;
    if (this.socket === null) this.pending = ex.bytes;
    else this.write(ex.bytes);
  }

  /** The socket is open (`secured`: and its TLS handshake done): the request waiting for it is written. */
  opened(socket: Socket<Conn>, secured: boolean): void {
    this.socket = socket;
    if (this.tls && !secured) return;
    const p = this.pending;
    this.pending = null;
    if (p !== null) this.write(p);
  }

  drained(): void {
    const p = this.pending;
    this.pending = null;
    if (p !== null && this.socket !== null) this.write(p);
  }

  private write(bytes: Uint8Array): void {
    const written = this.socket!.write(bytes);
    if (written < bytes.byteLength) this.pending = bytes.subarray(Math.max(0, written));
  }

  received(data: Buffer): void {
    if (this.ex === null) {
      // bytes on an idle connection: nothing can be framed after them
      this.destroy();
      return;
    }
    this.seen = true;
    if (this.buf === null) {
      this.buf = data;
      this.pos = 0;
    } else {
      this.buf = Buffer.concat([this.buf.subarray(this.pos), data]);
      this.pos = 0;
    }
    const ex = this.ex;
    try {
      let res: Response | null = null;
      if (this.phase === Phase.Head && (res = this.readHead()) === null) return;
      // the body's bytes in hand are read before the answer is handed over: an answer that breaks within them is a
      // 502, not a cut body
      this.readBody();
      if (res !== null) ex.done(res);
    } catch (err) {
      this.cut(ex, err);
    }
  }

  /** The connection ended (or failed): the answer ends with it, or fails. */
  closed(error: Error | undefined): void {
    if (this.dead) return;
    this.dead = true;
    const ex = this.ex;
    if (ex === null) return this.destroy(); // an idle connection the upstream closed
    if (this.phase === Phase.UntilClose) {
      this.flushUntilClose(); // (ends the answer: the connection is dead)
      return;
    }
    if (this.phase === Phase.Head && !this.seen && ex.retriable && !ex.settled) {
      // a reused connection the upstream had closed: an idempotent call goes once more, on a fresh one
      this.release();
      this.destroy();
      ex.again();
      return;
    }
    this.cut(ex, error ?? codedError("The upstream closed the connection before its answer ended", "ECONNRESET"));
  }

  destroy(): void {
    this.dead = true;
    this.socket?.terminate();
  }

  /** The answer cannot go on (a framing error, a cut, a reset): its promise or its body fails, the connection closes. */
  cut(ex: Exchange, err: unknown): void {
    if (this.ex !== ex) return;
    const stream = this.stream;
    this.release();
    this.destroy();
    if (stream !== null) {
      try {
        stream.error(err);
      } catch {
        // the body was already closed or cancelled
      }
    }
    ex.fail(err);
  }

  private release(): void {
    if (this.ex !== null) this.ex.conn = null;
    this.ex = null;
    this.stream = null;
    this.buf = null;
    this.phase = Phase.Done;
    if (this.paused) {
      this.paused = false;
      this.socket?.resume();
    }
  }

  /** Parses the header section once whole, into the answer (not yet handed over): null while more bytes are needed. */
  private readHead(): Response | null {
    for (;;) {
      const buf = this.buf!;
      const start = this.pos;
      const end = buf.indexOf(CRLF_CRLF, start);
      if (end < 0) {
        if (buf.byteLength - start > MAX_HEAD_BYTES) throw framing("header section too large");
        // lines ended by a bare LF would never end the section: refused now, not at the deadline (a CR last may await its LF)
        const partial = buf.toString("latin1", start, buf[buf.byteLength - 1] === 13 ? buf.byteLength - 1 : buf.byteLength);
        if (BARE_CR_LF_NUL.test(partial)) throw framing("bare CR, LF or NUL in the header section");
        return null;
      }
      if (end - start > MAX_HEAD_BYTES) throw framing("header section too large");
      const head = buf.toString("latin1", start, end);
      this.consume(end + 4);
      // every line ends in CRLF: a bare CR or LF, or a NUL, anywhere is refused (a parser that took it as a line end
      // would read other fields than these)
      if (BARE_CR_LF_NUL.test(head)) throw framing("bare CR, LF or NUL in the header section");
      const lines = head.split("\r\n");
      const statusMatch = STATUS_LINE.exec(lines[0]!);
      if (statusMatch === null) throw framing("malformed status line");
      const status = Number(statusMatch[2]);
      const http10 = statusMatch[1] === "0";
      // the fields as an object (the Response's cheapest form: ≈ 0.25 µs less than pairs); a repeated name joins its
      // values (RFC 9110 §5.3), Set-Cookie excepted, which keeps the pairs
      let fields: Record<string, string> | [string, string][] = Object.create(null) as Record<string, string>; // (no inherited names: a field called "constructor")
      let length: string | null = null;
      let transfer: string | null = null;
      let close = http10;
      let keepAlive: string | null = null;
      let typed = false;
      for (let i = 1; i < lines.length; i++) {
        const line = lines[i]!;
        const colon = line.indexOf(":");
        const name = colon > 0 ? line.slice(0, colon) : "";
        // a token right before the colon: no whitespace there (RFC 9112 §5.1), no empty name
        if (!TOKEN.test(name)) throw framing("malformed header line");
        const value = fieldValue(line, colon + 1);
        const lower = name.toLowerCase();
        if (lower === "content-length") {
          if (length !== null && length !== value) throw framing("conflicting Content-Length");
          length = value;
        } else if (lower === "transfer-encoding") {
          transfer = transfer === null ? value : `${transfer}, ${value}`;
          continue; // decoded here: the answer's body carries no transfer coding
        } else if (lower === "connection") {
          const tokens = value.toLowerCase().split(",").map((t) => t.trim());
          if (tokens.includes("close")) close = true;
          else if (http10 && tokens.includes("keep-alive")) close = false;
        } else if (lower === "keep-alive") keepAlive = value;
        else if (lower === "content-type") typed = true;
        if (Array.isArray(fields)) fields.push([lower, value]);
        else if (fields[lower] === undefined) fields[lower] = value;
        else if (lower === "set-cookie") fields = [...Object.entries(fields), [lower, value]];
        else fields[lower] = `${fields[lower]}, ${value}`;
      }
      if (status < 100 || status > 599) throw Object.assign(codedError(`The upstream answered with status ${status}`, "ERR_UPSTREAM_STATUS"), { status });
      if (status < 200) {
        // an interim answer (100 Continue, 103 Early Hints): dropped, the real one follows
        if (status === 101) throw framing("unexpected protocol switch (101)");
        if (this.buf === null) return null;
        continue;
      }
      if (close) this.reusable = false;
      if (keepAlive !== null) {
        const t = KEEP_ALIVE_TIMEOUT.exec(keepAlive);
        if (t !== null) this.reuseMs = Math.min(IDLE_REUSE_MS, Math.max(0, Number(t[1]) * 1000 - 1000));
      }
      if (this.ex!.method === "HEAD" || status === 204 || status === 304) this.phase = Phase.Done;
      else if (transfer !== null) {
        if (length !== null) throw framing("both Transfer-Encoding and Content-Length");
        if (transfer.toLowerCase() !== "chunked") throw framing(`unsupported Transfer-Encoding: ${transfer}`);
        this.phase = Phase.ChunkSize;
      } else if (length !== null) {
        if (!DIGITS.test(length)) throw framing("malformed Content-Length");
        this.left = Number(length);
        this.phase = this.left === 0 ? Phase.Done : Phase.Length;
      } else {
        this.phase = Phase.UntilClose;
        this.reusable = false;
      }
      return this.answer(status, statusMatch[3] ?? "", fields, typed);
    }
  }

  /** Drops the bytes before `to` from the buffer. */
  private consume(to: number): void {
    if (to >= this.buf!.byteLength) this.buf = null;
    else this.pos = to;
  }

  /**
   * The answer: with the whole body when it is already here (no stream) — unless it has no Content-Type, which the
   * server would then add (`application/octet-stream`, for a buffered body): that one streams, as every longer one.
   * The caller's field rules (`UpstreamInit.answer`) are applied to the fields before the Response is made.
   */
  private answer(status: number, statusText: string, fields: Record<string, string> | [string, string][], typed: boolean): Response {
    const ex = this.ex!;
    let body: BodyInit | null = null;
    const buf = this.buf;
    if (this.phase === Phase.Done) body = null;
    else if (typed && this.phase === Phase.Length && buf !== null && buf.byteLength - this.pos >= this.left) {
      body = buf.subarray(this.pos, this.pos + this.left) as Uint8Array<ArrayBuffer>;
      this.consume(this.pos + this.left);
      this.left = 0;
      this.phase = Phase.Done;
    } else {
      body = new ReadableStream<Uint8Array>(
        {
          start: (controller) => {
            this.stream = controller;
          },
          pull: () => {
            if (this.paused && this.ex === ex) {
              this.paused = false;
              this.socket?.resume();
            }
          },
          cancel: () => {
            // the agent went away: the rest of this answer will not be read, so the connection cannot be reused
            if (this.ex === ex) {
              this.stream = null;
              this.release();
              this.destroy();
            }
          },
        },
        new ByteLengthQueuingStrategy({ highWaterMark: READ_AHEAD_BYTES }),
      );
    }
    const rules = Array.isArray(fields) ? null : ex.fields;
    if (rules === null) return new Response(body, { status, statusText, headers: fields });
    rules.filter(fields as Record<string, string>);
    const res = new Response(body, { status, statusText, headers: fields });
    rules.made(res);
    return res;
  }

  /** Hands the body's bytes in hand to the stream, following the framing; finishes at its end. */
  private readBody(): void {
    for (;;) {
      const buf = this.buf;
      switch (this.phase) {
        case Phase.Done:
          this.finish();
          return;
        case Phase.UntilClose:
          this.flushUntilClose();
          return;
        case Phase.Length:
        case Phase.ChunkData: {
          if (buf === null) return;
          const n = Math.min(this.left, buf.byteLength - this.pos);
          this.push(buf.subarray(this.pos, this.pos + n));
          this.consume(this.pos + n);
          this.left -= n;
          if (this.left > 0) return;
          this.phase = this.phase === Phase.Length ? Phase.Done : Phase.ChunkDataEnd;
          break;
        }
        case Phase.ChunkSize: {
          if (buf === null) return;
          const eol = buf.indexOf("\r\n", this.pos);
          if (eol < 0) {
            if (buf.byteLength - this.pos > 4096) throw framing("chunk size line too long");
            return;
          }
          const line = buf.toString("latin1", this.pos, eol);
          this.consume(eol + 2);
          const m = CHUNK_SIZE.exec(line);
          if (m === null) throw framing("malformed chunk size");
          this.left = parseInt(m[1]!, 16);
          this.phase = this.left === 0 ? Phase.Trailers : Phase.ChunkData;
          break;
        }
        case Phase.ChunkDataEnd: {
          if (buf === null) return;
          if (buf.byteLength - this.pos < 2) {
            if (buf[this.pos] !== 13) throw framing("chunk data not followed by CRLF");
            return;
          }
          if (buf[this.pos] !== 13 || buf[this.pos + 1] !== 10) throw framing("chunk data not followed by CRLF");
          this.consume(this.pos + 2);
          this.phase = Phase.ChunkSize;
          break;
        }
        case Phase.Trailers: {
          if (buf === null) return;
          const eol = buf.indexOf("\r\n", this.pos);
          if (eol < 0) {
            if (buf.byteLength - this.pos > MAX_HEAD_BYTES) throw framing("trailer section too large");
            return;
          }
          const empty = eol === this.pos;
          if (!empty && LINE_BREAK.test(buf.toString("latin1", this.pos, eol))) throw framing("bare CR, LF or NUL in a trailer");
          this.consume(eol + 2);
          if (empty) this.phase = Phase.Done;
          break;
        }
        default:
          return;
      }
    }
  }

  private push(chunk: Uint8Array): void {
    const stream = this.stream;
    if (stream === null || chunk.byteLength === 0) return;
    stream.enqueue(chunk);
    if (!this.paused && (stream.desiredSize ?? 1) <= 0) {
      this.paused = true;
      this.socket?.pause();
    }
  }

  private flushUntilClose(): void {
    if (this.buf !== null) {
      this.push(this.buf.subarray(this.pos));
      this.buf = null;
    }
    if (this.dead) this.finish();
  }

  /** The answer ended where its framing said: the body closes; the connection goes back to the pool when nothing else is in the way. */
  private finish(): void {
    const stream = this.stream;
    const clean = this.reusable && this.buf === null && this.pending === null && !this.dead;
    this.release();
    if (stream !== null) {
      try {
        stream.close();
      } catch {
        // cancelled meanwhile
      }
    }
    if (clean) this.pool.give(this, performance.now());
    else this.destroy();
  }
}
