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
  const write = o.write ?? batchedStdout();
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
      write(accessLine(o.format, now(), r));
    },
    announce: (msg) => {
      // The start-up line: exactly `msg` in text (supervisors and scripts wait for it), a record in JSON.
      if (o.format === "text") write(`${scrub(msg)}\n`);
      else write(format("json", now(), "info", scrub(msg), undefined));
    },
  };
}

/**
 * stdout in batches: the lines of up to FLUSH_MS (or FLUSH_BYTES, whichever comes first) go out in one write — under
 * load an access record per request would otherwise be a write per request (5% of the proxy's CPU in a profile), and a
 * write per turn of the event loop still one per request or two (4% in issue 41's profile). Whatever is pending is
 * written synchronously when the process exits, so no line is lost on a clean stop.
 */
function batchedStdout(): (line: string) => void {
  let pending = "";
  let timer: ReturnType<typeof setTimeout> | null = null;
  const flush = () => {
    if (timer !== null) clearTimeout(timer);
    timer = null;
    if (pending === "") return;
    const chunk = pending;
    pending = "";
    process.stdout.write(chunk);
  };
  process.once("exit", () => {
    if (pending !== "") writeSync(1, pending);
    pending = "";
  });
  return (line) => {
    pending += line;
    if (pending.length >= FLUSH_BYTES) flush();
    else if (timer === null) {
      timer = setTimeout(flush, FLUSH_MS);
      timer.unref();
    }
  };
}

/** How long a line may wait for others to share its write, and how much may wait (characters). */
const FLUSH_MS = 10;
const FLUSH_BYTES = 64 * 1024;

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
