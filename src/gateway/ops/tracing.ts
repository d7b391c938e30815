/**
 * Traces (DESIGN §20): W3C `traceparent` taken from the request and carried to every outbound call (the upstream
 * API's request gets a `traceparent` naming ath's own span for that call as parent), and — with `--otlp-endpoint` or
 * OTEL_EXPORTER_OTLP_ENDPOINT — spans of the request, its store calls and its outbound calls exported as OTLP/HTTP JSON
 * to `<endpoint>/v1/traces`, in batches at most EXPORT_MS apart (spans leave within 5 s).
 *
 * A small exporter of ath's own rather than @opentelemetry/*: the SDK's packages add their module graph to the
 * compiled binary's start-up on every command, for a wire format this file writes in ~40 lines (docs/audit.md).
 * Without an endpoint nothing is recorded, and a request without `traceparent` does not even enter the context.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import type { Store } from "../../store/types.ts";
import type { Fetch, Logger, Tracer } from "../context.ts";

const EXPORT_MS = 1_000;
const MAX_QUEUED = 2_048;
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

export interface TraceContext {
  traceId: string;
  /** The span whose children new spans are. */
  spanId: string;
  flags: string;
  /** The request span's attributes, which the pipeline adds to once it knows the route. */
  attributes: Record<string, string | number>;
  /**
   * False once the request span has ended: work a request left behind (a timer it set, a queue it nudged) inherits its
   * context, and would otherwise export orphan spans long after — one a second for an idle webhook poll (issue 40).
   */
  open: boolean;
}

interface Span {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: 1 | 2 | 3;
  start: bigint;
  end?: bigint;
  attributes: Record<string, string | number>;
  error?: boolean;
}


export function createTracer(o: { endpoint?: string; version: string; fetch?: Fetch; log: Logger }): Tracer {
  const als = new AsyncLocalStorage<TraceContext>();
  /** Traced requests not yet answered: while none is, no outbound call is inside one. */
  let open = 0;
  const exporting = Boolean(o.endpoint);
  const url = o.endpoint ? `${o.endpoint.replace(/\/+$/, "")}/v1/traces` : "";
  const post = o.fetch ?? ((input, init) => globalThis.fetch(input, init));
  let queued: Span[] = [];
  let timer: ReturnType<typeof setTimeout> | undefined;
  let sending: Promise<void> = Promise.resolve();

  function finish(span: Span): void {
    if (!exporting) return;
    span.end = now();
    if (queued.length >= MAX_QUEUED) return; // the collector is not keeping up: drop rather than grow
    queued.push(span);
    if (timer === undefined) {
      timer = setTimeout(() => void flush(), EXPORT_MS);
      timer.unref();
    }
  }

  function flush(): Promise<void> {
    if (timer !== undefined) clearTimeout(timer);
    timer = undefined;
    const batch = queued;
    queued = [];
    if (batch.length > 0) {
      sending = sending.then(async () => {
        try {
          const res = await post(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(otlp(batch, o.version)), signal: AbortSignal.timeout(5_000) });
          await res.body?.cancel().catch(() => undefined);
          if (!res.ok) o.log.warn("trace export refused", { status: res.status, spans: batch.length });
        } catch (err) {
          o.log.warn("trace export failed", { spans: batch.length, error: (err as Error).name });
        }
      });
    }
    return sending;
  }

  function child(name: string, kind: 1 | 3, attributes: Record<string, string | number> = {}): Span | undefined {
    const parent = als.getStore();
    if (!parent?.open) return undefined;
    return { traceId: parent.traceId, spanId: randomHex(8), parentSpanId: parent.spanId, name, kind, start: now(), attributes };
  }

  async function traced<T extends Response>(req: Request, fn: () => Promise<T>, valid: RegExpExecArray | null): Promise<T> {
    const span: Span = {
      traceId: valid ? valid[1]! : randomHex(16),
      spanId: randomHex(8),
      ...(valid ? { parentSpanId: valid[2]! } : {}),
      name: `${req.method} request`,
      kind: 2,
      start: now(),
      attributes: { "http.request.method": req.method },
    };
    const ctx: TraceContext = { traceId: span.traceId, spanId: span.spanId, flags: valid ? valid[3]! : "01", attributes: span.attributes, open: true };
    let res: T;
    open++;
    try {
      res = await als.run(ctx, fn);
    } finally {
      ctx.open = false;
      open--;
    }
    span.attributes["http.response.status_code"] = res.status;
    span.name = `${req.method} ${String(span.attributes["http.route"] ?? "")}`.trim();
    span.error = res.status >= 500;
    finish(span);
    return res;
  }

  async function tracedFetch(fetch: Fetch, ctx: TraceContext, input: Parameters<Fetch>[0], init: Parameters<Fetch>[1]): Promise<Response> {
    // Never `new Request(input, init)` here: it would take a streamed body for itself.
    const method = (init?.method ?? (input instanceof Request ? input.method : "GET")).toUpperCase();
    const target = input instanceof Request ? input.url : String(input);
    const span: Span = { traceId: ctx.traceId, spanId: randomHex(8), parentSpanId: ctx.spanId, name: `${method} outbound`, kind: 3, start: now(), attributes: {
      "http.request.method": method, "server.address": URL.canParse(target) ? new URL(target).host : "",
    } };
    const headers = new Headers(init?.headers ?? (input instanceof Request ? input.headers : undefined));
    headers.set("traceparent", `00-${ctx.traceId}-${span.spanId}-${ctx.flags}`);
    try {
      const res = await fetch(input instanceof Request && init === undefined ? new Request(input, { headers }) : input, { ...init, headers });
      span.attributes["http.response.status_code"] = res.status;
      span.error = res.status >= 500;
      return res;
    } catch (err) {
      span.error = true;
      throw err;
    } finally {
      finish(span);
    }
  }

  function request<T extends Response>(req: Request, fn: () => Promise<T>): Promise<T> {
    const header = req.headers.get("traceparent");
    // Not exporting and nothing to carry on: the request's own promise, no span, no context, no extra await.
    if (!exporting && header === null) return fn();
    const parsed = header ? TRACEPARENT.exec(header.trim().toLowerCase()) : null;
    const valid = parsed && !/^0+$/.test(parsed[1]!) && !/^0+$/.test(parsed[2]!) ? parsed : null;
    if (!exporting && !valid) return fn();
    return traced(req, fn, valid);
  }

  return {
    exporting,
    request,
    entry(handle) {
      // (no closure per request unless the request is traced: issue 41)
      return (req, peer, settled) => (!exporting && !req.headers.has("traceparent") ? handle(req, peer, settled) : request(req, () => handle(req, peer, settled)));
    },
    annotate(attributes) {
      const ctx = als.getStore();
      if (ctx) Object.assign(ctx.attributes, attributes);
    },
    wrapFetch(fetch) {
      // Outside a traced request the call is `fetch` itself (no async wrapper: one promise fewer per proxied call).
      return (input, init) => {
        // no traced request open (nearly always when not exporting): no context to look up
        if (open === 0) return fetch(input, init);
        const ctx = als.getStore();
        return ctx?.open ? tracedFetch(fetch, ctx, input, init) : fetch(input, init);
      };
    },
    wrapStore(store) {
      if (!exporting) return store;
      return new Proxy(store, {
        get(target, name, receiver) {
          const value = Reflect.get(target, name, receiver) as unknown;
          if (typeof value !== "function" || name === "transaction" || name === "changes" || name === "close") {
            return typeof value === "function" ? (value as (...a: unknown[]) => unknown).bind(target) : value;
          }
          return (...args: unknown[]) => {
            const span = child(`store.${String(name)}`, 1, { "db.system": target.kind === "postgres" ? "postgresql" : "sqlite", "db.operation": String(name) });
            const result = (value as (...a: unknown[]) => unknown).apply(target, args);
            if (!span) return result;
            return Promise.resolve(result).then(
              (v) => (finish(span), v),
              (err) => {
                span.error = true;
                finish(span);
                throw err;
              },
            );
          };
        },
      });
    },
    flush,
    async close() {
      await flush();
    },
  };
}

// internal

function now(): bigint {
  return BigInt(Math.round((performance.timeOrigin + performance.now()) * 1e6));
}

function randomHex(bytes: number): string {
  return Buffer.from(crypto.getRandomValues(new Uint8Array(bytes))).toString("hex");
}

/** OTLP/HTTP JSON (opentelemetry-proto's JSON mapping: ids as hex, times as decimal strings of nanoseconds). */
function otlp(spans: Span[], version: string) {
  return {
    resourceSpans: [
      {
        resource: { attributes: [attr("service.name", "ath"), attr("service.version", version)] },
        scopeSpans: [
          {
            scope: { name: "ath", version },
            spans: spans.map((s) => ({
              traceId: s.traceId,
              spanId: s.spanId,
              ...(s.parentSpanId ? { parentSpanId: s.parentSpanId } : {}),
              name: s.name,
              kind: s.kind,
              startTimeUnixNano: String(s.start),
              endTimeUnixNano: String(s.end ?? s.start),
              attributes: Object.entries(s.attributes).map(([k, v]) => attr(k, v)),
              status: { code: s.error ? 2 : 0 },
            })),
          },
        ],
      },
    ],
  };
}

function attr(key: string, value: string | number) {
  return { key, value: typeof value === "number" ? { intValue: String(value) } : { stringValue: value } };
}
