/**
 * Sending a call upstream, for every door: the body (buffered when small enough to replay once), the person's upstream
 * token, the deadline — and `sendOnce`, the one place that knows what follows the upstream's answer: a 401 refreshes
 * the grant and resends once, unless the call was approved by a person (sent at most once, DESIGN §16: the grant is
 * refreshed for later calls) or its body streamed and cannot be replayed; a status outside 200–599 is the upstream's fault (502); the budget's `ATH-Budget-Remaining`.
 */
import { AthError } from "../../protocol/index.ts";
import { LONGEST_IDLE_TIMEOUT_S, type Gateway } from "../context.ts";
import { currentAccess, refreshAfterRejection, type LiveAccess } from "../domain/grants.ts";
import { requireNotRevoked } from "../domain/tokens.ts";
import { readRequestBounded } from "../http/body.ts";
import type { HeaderFields } from "./headers.ts";
import type { AnswerFields, Canceller, UpstreamInit } from "./http1.ts";

/** On answers to calls a budget counted: the calls left in the tightest matching budget's window (DESIGN §16). */
export const BUDGET_REMAINING = "ath-budget-remaining";

/**
 * Errors after which the call was certainly not sent (DESIGN §24): its grant could not be read (the store failed), the
 * provider's in-flight cap was full, or its API refused the connection. A door gives the call's budget counts back then;
 * after any other failure (a timeout, a reset mid-request) the call may have reached the upstream, and keeps them.
 */
const unsentErrors = new WeakSet<object>();

/** Whether `err`, thrown by `sendOnce`, means the call never left the gateway. */
export function notSent(err: unknown): boolean {
  return typeof err === "object" && err !== null && unsentErrors.has(err);
}

function unsent<E>(err: E): E {
  if (typeof err === "object" && err !== null) unsentErrors.add(err);
  return err;
}

/** Connection failures before a byte of the request left (Bun's fetch error codes). */
const NOT_CONNECTED = new Set(["ConnectionRefused", "ECONNREFUSED", "FailedToOpenSocket", "ENOTFOUND", "EHOSTUNREACH", "ENETUNREACH"]);

/** One call on its way upstream. */
export interface Outbound {
  providerId: string;
  grantId: string;
  /** The grant's access when the caller's plan holds it fresh (proxy/plan.ts); null: read it (refreshing when stale). */
  access?: LiveAccess | null;
  method: string;
  target: URL;
  /** The relay's to change (the door's forwardInPlace or upstreamRequestHeaders made them): the upstream token is set in it. */
  headers: Headers | HeaderFields;
  body: PreparedBody;
  /** Sent under a person's approval: at most once, whatever the upstream answers. */
  once: boolean;
  /** The calls left in the tightest budget that counted it (ATH-Budget-Remaining), or null. */
  remaining: number | null;
  /** The caller's token as presented: a revocation that raced this call names itself (TOKEN_REVOKED). */
  presented: string;
  /**
   * The agent's request as the listener got it, when its idle timeout is to be extended once the upstream is slow to
   * answer (`SLOW_ANSWER_MS`: the proxy door, which extends it only when a call may wait); absent: the door did.
   */
  listener?: Request;
  /** How the answer's fields are made fit for the caller while the upstream client parses them (the proxy door's rules). */
  answer?: AnswerFields;
}

/**
 * Sends the call, once or — after a 401 the refreshed grant may cure — twice; returns the upstream's answer with its
 * status checked and the budget header set. A dead grant throws 401 TOKEN_EXPIRED (`upstream_grant_revoked`); a
 * revocation that removed the grant under this call, TOKEN_REVOKED.
 */
export async function sendOnce(gw: Gateway, o: Outbound): Promise<Response> {
  const sending = startSend(gw, o);
  let answer: Response;
  try {
    answer = await sending.first;
  } catch (cause) {
    throw sending.failed(cause);
  }
  return sending.settle(answer);
}

/**
 * `sendOnce` in three steps, for a door that awaits the upstream itself (the proxy: one promise hop fewer per call,
 * issue 41): await `first`; what it throws, `failed` says what to throw instead; what it gives, `settle` makes the
 * answer — the rules after the first answer (the 401 rule, the status check, the budget header), with a promise only
 * when a 401 is followed by a refresh. Starting throws at once when the provider's concurrency cap is full.
 */
export interface Sending {
  first: Promise<Response>;
  failed(cause: unknown): unknown;
  settle(answer: Response): Response | Promise<Response>;
}

export function startSend(gw: Gateway, o: Outbound): Sending {
  // The access kept by the caller's plan: the first call leaves now. Else read it (refreshing first), then send: the
  // whole of it is `first`, already settled.
  if (!o.access) return { first: sendReading(gw, o), failed: passThrough, settle: answerAsIs };
  const attempt = new Attempt(gw, o.providerId, o.method, o.target, o.headers, o.body, o.access, true, o.listener, o.answer);
  return new FirstAnswer(gw, o, o.access, attempt);
}

/** Bodies up to this size are buffered so the request can be replayed once after a token refresh. */
const REPLAYABLE_BODY_BYTES = 1024 * 1024;

export interface PreparedBody {
  data: ArrayBuffer | Uint8Array | ReadableStream<Uint8Array> | null;
  replayable: boolean;
  /** Set when a streamed body crossed `--max-proxy-body` on its way upstream. */
  cut?: () => boolean;
}

/**
 * The body to send upstream: none, buffered when small enough to replay, else streamed — never more than `max` bytes
 * (`--max-proxy-body`): a larger Content-Length is refused before anything is sent, and a chunked body is cut at the
 * first chunk that crosses it (413 PAYLOAD_TOO_LARGE). `length`: the request's Content-Length as sent (the proxy reads
 * it before its headers become the upstream's).
 */
export function prepareBody(req: Request, max: number, length: string | null): PreparedBody | Promise<PreparedBody> {
  if (req.method === "GET" || req.method === "HEAD") return NO_BODY;
  const declared = length === null ? NaN : Number(length);
  // Small enough to replay, or over the limit (refused there): read whole by the one request-body reader, which takes a
  // declared length as the server buffered it (http/body.ts).
  if (declared <= REPLAYABLE_BODY_BYTES || declared > max) return wholeBody(req, length, max);
  if (length === null && !req.body) return NO_BODY;
  return streamedBody(req as Request & { body: ReadableStream<Uint8Array> }, max, length);
}

/** A body read whole (replayable), or none when it is empty. */
export function bufferedBody(bytes: Uint8Array): PreparedBody {
  return bytes.byteLength === 0 ? NO_BODY : { data: bytes, replayable: true };
}

/**
 * Sends one upstream call with the upstream token and waits for its answer; 504 UPSTREAM_TIMEOUT / 502
 * UPSTREAM_UNAVAILABLE when it cannot be had — at once when `--upstream-concurrency` calls to this provider are already
 * waiting for their answer (DESIGN §14).
 */
export async function send(
  gw: Gateway,
  providerId: string,
  method: string,
  target: URL,
  headers: Headers | HeaderFields,
  body: PreparedBody,
  access: LiveAccess,
  first = false,
  listener?: Request,
  answerFields?: AnswerFields,
): Promise<Response> {
  const call = new Attempt(gw, providerId, method, target, headers, body, access, first, listener, answerFields);
  let res: Response;
  try {
    res = await call.answer;
  } catch (cause) {
    throw call.failed(cause);
  }
  return call.answered(res);
}

// internal

const passThrough = (cause: unknown): unknown => cause;
const answerAsIs = (answer: Response): Response => answer;

/** sendOnce when the access must be read first (the caller's plan did not hold it fresh). */
async function sendReading(gw: Gateway, o: Outbound): Promise<Response> {
  let access: LiveAccess;
  try {
    access = await currentAccess(gw, o.grantId);
  } catch (err) {
    // A revocation drops the token, then its grant: a call that read the token just before its revocation reached
    // this instance finds the grant gone. Ask about the token again, so the answer names what happened.
    if (err instanceof AthError && err.details?.reason === "upstream_grant_revoked") await requireNotRevoked(gw, o.presented).catch((e: unknown) => Promise.reject(unsent(e)));
    throw unsent(err);
  }
  return sendOnce(gw, { ...o, access });
}

/** The rules after a call's first answer (sendOnce's): what `Sending` gives a door that awaits the answer itself. */
class FirstAnswer implements Sending {
  readonly first: Promise<Response>;
  constructor(
    private readonly gw: Gateway,
    private readonly o: Outbound,
    private readonly access: LiveAccess,
    private readonly attempt: Attempt,
  ) {
    this.first = attempt.answer;
  }

  failed(cause: unknown): unknown {
    return this.attempt.failed(cause);
  }

  settle(answer: Response): Response | Promise<Response> {
    this.attempt.answered(answer);
    // a 401 the refreshed grant may cure, or an invalid status: the rest in full (a promise)
    if ((answer.status === 401 && this.access.canRefresh) || answer.status < 200 || answer.status > 599) return this.afterRejection(answer);
    return checked(answer, this.o.remaining);
  }

  private async afterRejection(first: Response): Promise<Response> {
    const { gw, o } = this;
    let res = first;
    if (res.status === 401 && this.access.canRefresh) {
      if (!o.once && o.body.replayable) {
        await res.body?.cancel();
        const access = await refreshAfterRejection(gw, o.grantId, this.access.version);
        res = await send(gw, o.providerId, o.method, o.target, o.headers, o.body, access, false, o.listener, o.answer);
      } else if (o.once) {
        // Sent at most once: the 401 is the answer, and the grant is refreshed for later calls — a refresh that fails
        // says nothing this answer must carry. (A streamed body, already gone, is relayed as answered: nothing learnt.)
        await refreshAfterRejection(gw, o.grantId, this.access.version).catch(() => undefined);
      }
    }
    if (res.status < 200 || res.status > 599) {
      // Not an HTTP status a Response can carry (Bun's fetch passes 0–999 through): the upstream is broken, not the caller.
      await res.body?.cancel();
      throw new AthError("UPSTREAM_UNAVAILABLE", `The upstream answered with an invalid HTTP status (${res.status})`, { reason: "invalid_status", status: res.status });
    }
    return checked(res, o.remaining);
  }
}

/** The answer with the budget header: only the gateway counts budgets — an upstream's own ATH-Budget-Remaining never reaches the caller. */
function checked(res: Response, remaining: number | null): Response {
  return remaining === null && !res.headers.has(BUDGET_REMAINING) ? res : withBudget(res, remaining);
}

/**
 * One upstream call on its way: started when made (nothing awaited), then `answered` or `failed` — each ends its
 * deadline and its place among the provider's waiting calls. Not an async function of its own: whoever sends awaits
 * `answer` itself (a call's first attempt: startSend's `first`): one promise hop fewer per call — a hop is a microtask,
 * a promise and an async frame resumed, and this one was worth 1.048× the GET throughput (issue 41, wrk.ts --ab).
 */
class Attempt implements Deadline, Canceller {
  readonly answer: Promise<Response>;
  /** Set by the upstream client while the answer is awaited (proxy/http1.ts): cuts the call. */
  cancel: (() => void) | null = null;
  /** The deadline passed before the answer came. */
  private expired = false;
  private readonly started = performance.now();
  /** When it is cut (its entry among the gateway's deadlines: the attempt itself, no object of its own). */
  readonly at: number;
  /** When the listener's idle timeout is extended if it still waits (Infinity: no listener, or done). */
  slowAt: number;
  private readonly relay: RelayState;
  constructor(
    private readonly gw: Gateway,
    private readonly providerId: string,
    method: string,
    private readonly target: URL,
    headers: Headers | HeaderFields,
    private readonly body: PreparedBody,
    access: LiveAccess,
    private readonly first: boolean,
    private readonly listener: Request | undefined,
    answerFields?: AnswerFields,
  ) {
    this.relay = relayOf(gw);
    try {
      enter(gw, this.relay.waiting, providerId);
    } catch (err) {
      throw first ? unsent(err) : err;
    }
    // `headers` are the relay's to change (forwardInPlace, upstreamRequestHeaders made them): set in place, no copy per request.
    if (headers instanceof Headers) headers.set("authorization", `Bearer ${access.accessToken}`);
    else headers.authorization = `Bearer ${access.accessToken}`;
    // A deadline dropped once the headers are in, not AbortSignal.timeout: the limit is on the answer starting, and a
    // long streamed body must not be cut when it passes.
    this.at = this.started + gw.opts.upstreamTimeoutMs;
    this.slowAt = listener === undefined ? Infinity : this.started + SLOW_ANSWER_MS;
    this.relay.deadlines.add(this);
    // decompress: false — Bun's fetch would otherwise inflate the body yet keep Content-Encoding (DESIGN §3).
    const init: UpstreamInit = {
      method,
      headers,
      body: body.data as BodyInit | null, // (a Uint8Array is a body: its buffer's type is all TypeScript doubts)
      redirect: "manual",
      canceller: this,
      decompress: false,
    };
    if (answerFields !== undefined) init.answer = answerFields;
    if (body.data instanceof ReadableStream) init.duplex = "half";
    try {
      this.answer = gw.upstreamFetch(target, init);
    } catch (err) {
      this.answer = Promise.reject(err);
    }
  }

  /** The deadline passed: the call is cut (504 UPSTREAM_TIMEOUT). */
  expire(): void {
    this.expired = true;
    this.cancel?.();
  }

  /** Still waiting after SLOW_ANSWER_MS: the agent's connection is kept past the listener's idle timeout. */
  slow(): void {
    this.slowAt = Infinity;
    if (this.listener !== undefined) this.gw.extendTimeout?.(this.listener, LONGEST_IDLE_TIMEOUT_S);
  }

  /** The upstream's answer arrived: the deadline no longer applies. */
  answered(res: Response): Response {
    this.end();
    this.relay.upstreamDuration(this.providerId).observe((performance.now() - this.started) / 1000);
    return res;
  }

  /** What to throw for a call that got no answer. */
  failed(cause: unknown): unknown {
    this.end();
    const { gw, target } = this;
    if (this.body.cut?.()) return tooLarge(gw.opts.maxProxyBody);
    if (this.expired) {
      return new AthError("UPSTREAM_TIMEOUT", `The provider API did not answer within ${gw.opts.upstreamTimeoutMs} ms`, { url_origin: target.origin });
    }
    const code = (cause as { code?: unknown } | null)?.code;
    if (code === "ERR_UPSTREAM_STATUS") {
      // proxy/http1.ts: a status a Response cannot carry, as afterRejection's check below says of fetch's answers
      const status = (cause as { status: number }).status;
      return new AthError("UPSTREAM_UNAVAILABLE", `The upstream answered with an invalid HTTP status (${status})`, { reason: "invalid_status", status });
    }
    const err = new AthError("UPSTREAM_UNAVAILABLE", `The provider API at ${target.origin} could not be reached`, { url_origin: target.origin }, { cause });
    return this.first && NOT_CONNECTED.has(String(code)) ? unsent(err) : err;
  }

  private end(): void {
    this.relay.deadlines.delete(this);
    leave(this.relay.waiting, this.providerId);
  }
}

/** A request without a body: nothing to send, nothing to replay. */
const NO_BODY: PreparedBody = Object.freeze({ data: null, replayable: true });

function wholeBody(req: Request, length: string | null, max: number): Promise<PreparedBody> {
  // (made in the read's own reaction, not an async function's frame: promise hops fewer per call with a body)
  return readRequestBounded(req, length, max, () => tooLarge(max), bufferedBody);
}

/** A body too large to replay: passed on as it streams (a declared length is held to by the server; a chunked one counted). */
function streamedBody(req: Request & { body: ReadableStream<Uint8Array> }, max: number, length: string | null): PreparedBody {
  if (length !== null) return { data: req.body, replayable: false };
  let seen = 0;
  let cut = false;
  const counted = req.body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        seen += chunk.byteLength;
        if (seen > max) {
          cut = true;
          controller.error(tooLarge(max));
        } else controller.enqueue(chunk);
      },
    }),
  );
  return { data: counted, replayable: false, cut: () => cut };
}

/**
 * What the relay keeps per gateway, found once per call (one lookup, issue 41): the calls waiting on each provider's
 * answer, their deadlines, and each provider's upstream-duration series. A call counts among the waiting until its
 * response headers arrive (or it fails): what a provider that never answers piles up. A body then streaming slowly is
 * bounded by the listener's timeouts instead.
 */
class RelayState {
  readonly waiting = new Map<string, number>();
  readonly deadlines: Deadlines;
  private readonly durations = new Map<string, { observe(value: number): void }>();
  constructor(private readonly gw: Gateway) {
    this.deadlines = new Deadlines(Math.min(250, Math.max(5, gw.opts.upstreamTimeoutMs / 10)));
  }

  /** `ath_proxy_upstream_duration_seconds{provider}`'s series (configured providers only: a bounded set). */
  upstreamDuration(providerId: string): { observe(value: number): void } {
    let s = this.durations.get(providerId);
    if (s === undefined) this.durations.set(providerId, (s = this.gw.metrics.upstreamDuration.series([providerId])));
    return s;
  }
}

const relays = new WeakMap<Gateway, RelayState>();

function relayOf(gw: Gateway): RelayState {
  let r = relays.get(gw);
  if (r === undefined) relays.set(gw, (r = new RelayState(gw)));
  return r;
}

/** One more call waiting on `providerId` — 502 at once when `--upstream-concurrency` already are. */
function enter(gw: Gateway, counts: Map<string, number>, providerId: string): void {
  const n = counts.get(providerId) ?? 0;
  if (n >= gw.opts.upstreamConcurrency) {
    throw new AthError(
      "UPSTREAM_UNAVAILABLE",
      `${n} requests to provider '${providerId}' are already waiting for its API; try again shortly`,
      { reason: "upstream_concurrency", provider_id: providerId },
      { headers: { "retry-after": "1" } },
    );
  }
  counts.set(providerId, n + 1);
}

function leave(counts: Map<string, number>, providerId: string): void {
  const left = (counts.get(providerId) ?? 1) - 1;
  if (left <= 0) counts.delete(providerId);
  else counts.set(providerId, left);
}

/**
 * Calls waiting for their upstream's answer, each with the moment it is cut (504 UPSTREAM_TIMEOUT): one timer per
 * gateway sweeps them while any wait, rather than a timer set and cleared per call (cheaper per call in `scripts/bench/inproc-ab.ts`).
 * A call is cut at most a tick (a tenth of the timeout, 5–250 ms) after its deadline.
 */
class Deadlines {
  private readonly waiting = new Set<Deadline>();
  private timer: ReturnType<typeof setInterval> | null = null;
  constructor(private readonly tickMs: number) {}

  add(d: Deadline): void {
    this.waiting.add(d);
    if (this.timer === null) {
      this.timer = setInterval(() => this.sweep(), this.tickMs);
      this.timer.unref();
    }
  }

  delete(d: Deadline): void {
    this.waiting.delete(d);
  }

  private sweep(): void {
    const now = performance.now();
    for (const d of this.waiting) {
      if (d.at > now) {
        if (d.slowAt <= now) d.slow();
        continue;
      }
      this.waiting.delete(d);
      d.expire();
    }
    if (this.waiting.size === 0 && this.timer !== null) {
      clearInterval(this.timer);
      this.timer = null;
    }
  }
}

/** A call waiting with the moment it is cut and what cuts it, and the moment it counts as slow (then `slow()`). */
interface Deadline {
  readonly at: number;
  expire(): void;
  readonly slowAt: number;
  slow(): void;
}

/**
 * An upstream call still unanswered after this long keeps its agent's connection past the listener's idle timeout
 * (10 s, DESIGN §14) — to Bun's longest — well before it would be cut, a loaded loop's late sweep included.
 */
const SLOW_ANSWER_MS = 2_000;

/** The budget header set on the upstream's answer, or an upstream's own removed (null); frozen headers are copied first. */
function withBudget(res: Response, remaining: number | null): Response {
  const apply = (h: Headers) => (remaining === null ? h.delete(BUDGET_REMAINING) : h.set(BUDGET_REMAINING, String(remaining)));
  try {
    apply(res.headers);
    return res;
  } catch {
    const headers = new Headers(res.headers);
    apply(headers);
    return new Response(res.body, { status: res.status, statusText: res.statusText, headers });
  }
}

function tooLarge(max: number): AthError {
  return new AthError("PAYLOAD_TOO_LARGE", `The request body exceeds ${max} bytes (--max-proxy-body)`, { limit: max });
}
