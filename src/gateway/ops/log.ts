/**
 * The gateway's one log writer (DESIGN §10): records of `time, level, msg` and fields, as JSON lines or as text, at or
 * above a level — debug and info (the access records, the start-up line) on stdout, warn and error on stderr. Secrets are kept out HERE, where every line is written, not by care at each call site: a field whose
 * name says secret (token, secret, code, cookie, authorization, state, …) is replaced whole; every string — the message
 * included — loses URL query strings and fragments, the gateway's own secrets by their prefix (`ath_tk_…`), bearer
 * credentials and `name=value` / `"name": "value"` pairs whose name says secret; an error logs only its name and
 * message, scrubbed the same way.
 */
import type { AccessRecord, LogFields, Logger, LogLevel } from "../context.ts";
import { writeSync } from "node:fs";

export type LogFormat = "text" | "json";

export interface LogOptions {
  format: LogFormat;
  level: LogLevel;
  /** Where debug and info lines go (default: stdout). One call per line, with its "\n". */
  write?: (line: string) => void;
  /** Where warn and error lines go (default: stderr, or `write` when only that is given). */
  writeError?: (line: string) => void;
  /** Epoch milliseconds (default Date.now). */
  now?: () => number;
}

export const LOG_LEVELS: readonly LogLevel[] = ["debug", "info", "warn", "error"];

export function createLogger(o: LogOptions): Logger {
  // stdout (the default) takes bytes in batches, and the access record is written into them as bytes (LineBatch)
  const batch = o.write === undefined ? stdoutBatch() : null;
  const write = o.write ?? ((line: string) => batch!.line(line));
  // Warnings and errors on stderr, as a supervisor expects; the start-up line stays the first line on stdout.
  const writeError = o.writeError ?? o.write ?? ((line: string) => void process.stderr.write(line));
  const now = o.now ?? Date.now;
  const min = LOG_LEVELS.indexOf(o.level);
  const emit = (level: LogLevel, msg: string, fields?: LogFields) => {
    if (LOG_LEVELS.indexOf(level) < min) return;
    (level === "warn" || level === "error" ? writeError : write)(format(o.format, now(), level, scrub(msg), fields ? redact(fields) : undefined));
  };
  return {
    enabled: (level) => LOG_LEVELS.indexOf(level) >= min,
    debug: (msg, fields) => emit("debug", msg, fields),
    info: (msg, fields) => emit("info", msg, fields),
    warn: (msg, fields) => emit("warn", msg, fields),
    error: (msg, err, fields) => emit("error", msg, err === undefined ? fields : { ...fields, error: describe(err) }),
    access: (r) => {
      if (min > INFO) return;
      if (batch !== null && o.format === "json") batch.access(now(), r);
      else write(accessLine(o.format, now(), r));
    },
    announce: (msg) => {
      // The start-up line: exactly `msg` in text (supervisors and scripts wait for it), a record in JSON.
      if (o.format === "text") write(`${scrub(msg)}\n`);
      else write(format("json", now(), "info", scrub(msg), undefined));
    },
  };
}

/**
 * Lines gathered as bytes and written in batches: those of up to FLUSH_MS (or FLUSH_BYTES, whichever comes first) go
 * out in one write — under load an access record per request would otherwise be a write per request (5% of the
 * proxy's CPU in a profile), and a write per turn of the event loop still one per request or two (4% in issue 41's
 * profile). The access record, a line per request, is written straight into the batch's bytes from parts made once
 * (`access`): no string per line (issue 41: building and writing the line cost ≈ 10% of the proxy's throughput).
 * `flush` hands the bytes over (a new buffer follows: the write may hold them).
 */
export class LineBatch {
  private buf = new Uint8Array(BUFFER_BYTES);
  private n = 0;
  private timer: ReturnType<typeof setTimeout> | null = null;
  /** Parts of the access line made once: `"method":…,"route":…,"status":` per route and method. */
  private readonly heads = new Map<string, Map<string, Uint8Array>>();
  /** `,"client_id":…,"provider_id":…}\n` per client and provider. */
  private readonly tails = new Map<string, Map<string, Uint8Array>>();
  private isoTime = -1;
  private readonly iso = new Uint8Array(24);

  constructor(private readonly out: (chunk: Uint8Array) => void) {}

  line(s: string): void {
    // UTF-8 takes at most 3 bytes per UTF-16 unit
    if (s.length * 3 > BUFFER_BYTES - this.n) {
      this.flush();
      if (s.length * 3 > BUFFER_BYTES) return this.out(ENCODER.encode(s));
    }
    this.n += ENCODER.encodeInto(s, this.buf.subarray(this.n)).written;
    this.written();
  }

  /** The access record's JSON line — byte for byte what `accessLine("json", time, r)` makes (log.test.ts holds them equal). */
  access(time: number, r: AccessRecord): void {
    const id = r.request_id;
    const ms = r.duration_ms;
    const plain = id.length <= MAX_PLAIN_ID && ms >= 0 && ms < MAX_PLAIN_DURATION && Math.round(ms * 1000) / 1000 === ms && Number.isInteger(r.status) && r.status >= 0 && r.status < 1e15;
    if (!plain) return this.line(accessLine("json", time, r));
    const head = this.head(r.route, r.method);
    const tail = this.tail(r.client_id, r.provider_id);
    if (BUFFER_BYTES - this.n < ACCESS_FIXED_BYTES + id.length + head.length + tail.length) this.flush();
    const b = this.buf;
    let n = this.n;
    b.set(TIME_OPEN, n);
    n += TIME_OPEN.length;
    if (time !== this.isoTime) {
      this.isoTime = time;
      ENCODER.encodeInto(new Date(time).toISOString(), this.iso);
    }
    b.set(this.iso, n);
    n += 24;
    b.set(ID_OPEN, n);
    n += ID_OPEN.length;
    let hex = true;
    for (let i = 0; i < id.length; i++) {
      const c = id.charCodeAt(i);
      // what quote() writes as is: printable ASCII but `"` and `\` (else the general line, escaped)
      if (c < 0x20 || c > 0x7e || c === 0x22 || c === 0x5c) return this.line(accessLine("json", time, r));
      if (hex && !((c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x66) || c === 0x2d)) hex = false;
      b[n++] = c;
    }
    // An id that may hold a secret is scrubbed by the general line; one of hex digits and dashes (a generated id) cannot.
    if (!hex && MAY_HOLD_SECRET.test(id)) return this.line(accessLine("json", time, r));
    b[n++] = 0x22; // "
    b.set(head, n);
    n += head.length;
    n = digits(b, n, r.status);
    b.set(DURATION_OPEN, n);
    n += DURATION_OPEN.length;
    n = milliseconds(b, n, ms);
    b.set(tail, n);
    this.n = n + tail.length;
    this.written();
  }

  flush(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    if (this.n === 0) return;
    const chunk = this.buf.subarray(0, this.n);
    this.buf = new Uint8Array(BUFFER_BYTES);
    this.n = 0;
    this.out(chunk);
  }

  private written(): void {
    if (this.n >= FLUSH_BYTES) this.flush();
    else if (this.timer === null) {
      this.timer = setTimeout(() => this.flush(), FLUSH_MS);
      this.timer.unref();
    }
  }

  private head(route: string, method: string): Uint8Array {
    let byMethod = this.heads.get(route);
    if (byMethod === undefined) {
      if (this.heads.size >= MAX_PARTS) this.heads.clear();
      this.heads.set(route, (byMethod = new Map()));
    }
    let head = byMethod.get(method);
    if (head === undefined) byMethod.set(method, (head = ENCODER.encode(`,"method":${quote(method)},"route":${quote(route)},"status":`)));
    return head;
  }

  private tail(client: string | undefined, provider: string | undefined): Uint8Array {
    if (client === undefined && provider === undefined) return CLOSE;
    // (no client id and no provider id holds NUL, the key of an absent one: the router and the store refuse it)
    let byProvider = this.tails.get(client ?? "\0");
    if (byProvider === undefined) {
      if (this.tails.size >= MAX_PARTS) this.tails.clear();
      this.tails.set(client ?? "\0", (byProvider = new Map()));
    }
    const key = provider ?? "\0";
    let tail = byProvider.get(key);
    if (tail === undefined) {
      let t = "";
      if (client !== undefined) t += `,"client_id":${quote(scrub(client))}`;
      if (provider !== undefined) t += `,"provider_id":${quote(scrub(provider))}`;
      byProvider.set(key, (tail = ENCODER.encode(`${t}}\n`)));
    }
    return tail;
  }
}

/** stdout in batches; whatever is pending is written synchronously when the process exits, so no line is lost on a clean stop. */
function stdoutBatch(): LineBatch {
  let exiting = false;
  const batch = new LineBatch((chunk) => {
    if (exiting) writeSync(1, chunk);
    else process.stdout.write(chunk);
  });
  process.once("exit", () => {
    exiting = true;
    batch.flush();
  });
  return batch;
}

/** How long a line may wait for others to share its write, and how much may wait (bytes). */
const FLUSH_MS = 10;
const FLUSH_BYTES = 64 * 1024;
/** Room for one more line of up to 16 KiB (longer ones are written on their own). */
const BUFFER_BYTES = FLUSH_BYTES + 16 * 1024;
/** Route/method and client/provider parts kept (a flood of client ids only costs their parts again). */
const MAX_PARTS = 1_000;
const ENCODER = new TextEncoder();
const TIME_OPEN = ENCODER.encode('{"time":"');
const ID_OPEN = ENCODER.encode('","level":"info","msg":"request","request_id":"');
const DURATION_OPEN = ENCODER.encode(',"duration_ms":');
const CLOSE = ENCODER.encode("}\n");
/** The access line's bytes besides the id, the head and the tail: time, status (at most 16 digits), duration and their framing. */
const ACCESS_FIXED_BYTES = TIME_OPEN.length + 24 + ID_OPEN.length + 1 + 16 + DURATION_OPEN.length + 24;
/** Longer request ids (the pipeline's are at most 128 characters) and longer durations go the general way. */
const MAX_PLAIN_ID = 128;
const MAX_PLAIN_DURATION = 1e9;

/** A non-negative integer's decimal digits. */
function digits(b: Uint8Array, n: number, v: number): number {
  if (v >= 10) n = digits(b, n, Math.floor(v / 10));
  b[n] = 0x30 + (v % 10);
  return n + 1;
}

/**
 * A duration in milliseconds with at most three decimals, as `String(Math.round(ms * 1000) / 1000)` writes it (below
 * 1e9 ms the shortest digits that read back as the value are the decimals themselves): trailing zeros dropped.
 */
function milliseconds(b: Uint8Array, n: number, ms: number): number {
  const micros = Math.round(ms * 1000);
  n = digits(b, n, Math.floor(micros / 1000));
  let frac = micros % 1000;
  if (frac === 0) return n;
  b[n++] = 0x2e; // .
  let scale = 100;
  while (frac !== 0) {
    const d = Math.floor(frac / scale);
    b[n++] = 0x30 + d;
    frac -= d * scale;
    scale /= 10;
  }
  return n;
}

/** Logs nothing (in-process gateways of tests, unless they pass a logger). */
export const SILENT: Logger = {
  access: () => undefined,
  enabled: () => false,
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
  announce: () => undefined,
};

/** Field names that say "secret": their values are never written. */
const SECRET_NAME = /secret|token|passw|cookie|authoriz|verifier|attestation|assertion|credential|api[_-]?key|(^|[_-])(code|state|key)$/i;

/**
 * `fields` with secret-named fields replaced and every string scrubbed, recursively (depth-bounded). Exported for the
 * tests that check it against every secret of a flow.
 */
export function redact(fields: LogFields, depth = 0): LogFields {
  const out: LogFields = {};
  for (const k in fields) out[k] = secretName(k) ? REDACTED : clean(fields[k], depth);
  return out;
}

/** A string without anything that may carry a secret: query strings, fragments, our secrets, credentials. */
export function scrub(s: string): string {
  if (s.length > MAX_STRING) s = `${s.slice(0, MAX_STRING)}…`;
  // most strings (ids, routes, methods) hold nothing any rule below could match: one test instead of four
  if (!MAY_HOLD_SECRET.test(s)) return s;
  return s
    .replace(URL_QUERY, "$1")
    .replace(OUR_SECRETS, "$1[redacted]")
    .replace(SCHEME_CREDENTIAL, "$1 [redacted]")
    .replace(SECRET_PAIR, "$1$2[redacted]");
}

// internal

const REDACTED = "[redacted]";
/** What every rule below needs at least one of: `?`/`#` (URLs), `ath_…_` (our prefixes), a scheme word, `=`/`:` (pairs). */
const MAY_HOLD_SECRET = /[?#=:]|ath_[a-z]+_|bearer|basic/i;
const MAX_STRING = 2000;
/** `?…` and `#…` of anything URL-shaped (absolute, or a path) up to the next space or quote. */
const URL_QUERY = /((?:[a-z][a-z0-9+.-]*:\/\/|\/)[^\s"'?#<>]*)[?#][^\s"'<>]*/gi;
/** The gateway's own secrets, by prefix (protocol PREFIX, the admin token). `ath_` alone is a client_id: public. */
const OUR_SECRETS = /\b(ath_(?:secret|tk|code|sess|admin)_)[A-Za-z0-9_-]+/g;
/** `Bearer x`, `Basic x`. */
const SCHEME_CREDENTIAL = /\b(bearer|basic)\s+[^\s"',]+/gi;
/** `access_token=x`, `"refresh_token": "x"`, `client_secret: x`, `code=x`, `state=x`, `cookie: x`… */
const SECRET_PAIR = /\b((?:[a-z_]*(?:token|secret|password|assertion|verifier)|code|state|cookie|authorization)"?)(\s*[=:]\s*"?)[^\s"&,;}]+/gi;

/** SECRET_NAME's verdict per field name: call sites use a few dozen names, over and over. */
const verdicts = new Map<string, boolean>();
function secretName(k: string): boolean {
  let v = verdicts.get(k);
  if (v === undefined) {
    v = SECRET_NAME.test(k);
    if (verdicts.size < 1000) verdicts.set(k, v);
  }
  return v;
}

function clean(v: unknown, depth: number): unknown {
  if (typeof v === "string") return scrub(v);
  if (v === null || typeof v !== "object") return v;
  if (depth >= 4) return "[…]";
  if (v instanceof Error) return describe(v);
  if (Array.isArray(v)) return v.slice(0, 50).map((x) => clean(x, depth + 1));
  return redact(v as LogFields, depth + 1);
}

/** An error as it may be logged: its name and message (a cause or a stack may carry request data). */
function describe(err: unknown): string {
  return scrub(err instanceof Error ? `${err.name}: ${err.message}` : String(err));
}

/** A JSON string: most values (ids, routes, methods) need no escaping, and skip JSON.stringify. */
function quote(s: string): string {
  return PLAIN.test(s) ? `"${s}"` : JSON.stringify(s);
}
const PLAIN = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;

/** Field names, quoted once: the code names a few dozen and the access record writes seven per request. */
function quotedKey(k: string): string {
  let q = quotedKeys.get(k);
  if (q === undefined) {
    q = quote(k);
    if (quotedKeys.size < 1000) quotedKeys.set(k, q);
  }
  return q;
}
const quotedKeys = new Map<string, string>();

/** The ISO time of the last line: lines of one millisecond share it. */
let lastTime = NaN;
let lastIso = "";

const INFO = LOG_LEVELS.indexOf("info");

/**
 * The access record's line — the same line `info("request", fields)` writes (tests/unit/gateway/ops/log.test.ts holds
 * them equal), built in one string from the fixed field order: no fields object, no redaction copy.
 */
function accessLine(fmt: LogFormat, time: number, r: AccessRecord): string {
  // The request id is the client's when sane ([A-Za-z0-9._-], pipeline.ts), and could spell one of our secrets'
  // prefixes: it and the identifiers are scrubbed as every string is; the method and the route template are ours.
  const requestId = scrub(r.request_id);
  if (fmt !== "json") {
    const fields: LogFields = { request_id: requestId, method: r.method, route: r.route, status: r.status, duration_ms: r.duration_ms };
    if (r.client_id !== undefined) fields.client_id = scrub(r.client_id);
    if (r.provider_id !== undefined) fields.provider_id = scrub(r.provider_id);
    return format(fmt, time, "info", "request", fields);
  }
  if (time !== lastTime) {
    lastTime = time;
    lastIso = new Date(time).toISOString();
  }
  let line = `{"time":"${lastIso}","level":"info","msg":"request","request_id":${quote(requestId)},"method":${quote(r.method)},"route":${quote(r.route)},"status":${r.status},"duration_ms":${r.duration_ms}`;
  if (r.client_id !== undefined) line += `,"client_id":${quote(scrub(r.client_id))}`;
  if (r.provider_id !== undefined) line += `,"provider_id":${quote(scrub(r.provider_id))}`;
  return `${line}}\n`;
}

function format(fmt: LogFormat, time: number, level: LogLevel, msg: string, fields: LogFields | undefined): string {
  if (time !== lastTime) {
    lastTime = time;
    lastIso = new Date(time).toISOString();
  }
  if (fmt === "json") {
    // written out rather than JSON.stringify({...}): no object built per line (the access record is on every request)
    let line = `{"time":"${lastIso}","level":"${level}","msg":${quote(msg)}`;
    if (fields) {
      for (const k in fields) {
        const v = fields[k];
        if (v === undefined) continue;
        line += `,${quotedKey(k)}:${typeof v === "number" && Number.isFinite(v) ? v : typeof v === "string" ? quote(v) : JSON.stringify(v)}`;
      }
    }
    return `${line}}\n`;
  }
  let line = `${lastIso} ${level.toUpperCase().padEnd(5)} ${msg}`;
  if (fields) {
    for (const k in fields) {
      const v = fields[k];
      if (v === undefined) continue;
      const s = typeof v === "string" ? v : JSON.stringify(v);
      line += ` ${k}=${/^[^\s"=]+$/.test(s) ? s : JSON.stringify(s)}`;
    }
  }
  return `${line.replace(/[\r\n]/g, " ")}\n`;
}
