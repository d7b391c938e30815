/**
 * The request pipeline: request id → route → rate budget → the row's caller check → handler, with the one error
 * boundary, then the access record and the metrics of the answer. Everything that applies to requests by route row
 * (request ids, access log, metrics, rate and body limits) is applied here, once, from the row's fields — never inside
 * handlers; a handler only says who the request is for (`call.identify`) once it knows.
 */
import { AthError } from "../../protocol/index.ts";
import type { Call, Gateway, Metrics, Route, RouteAuth, RouteKind } from "../context.ts";
import { errorPage } from "../pages/errors.ts";
import { BearerChallenge, challengeResponse, JsonRpcError, jsonRpcErrorResponse, OAuthError, oauthErrorResponse } from "./errors.ts";
import { isLimitError } from "./request.ts";
import { errorResponse, exposed } from "./response.ts";
import { createRouter, splitTarget, type Router } from "./router.ts";

/** The caller checks named by the table's `auth` column; they throw an AthError to refuse. */
export type Guards = Record<RouteAuth, (call: Call) => void>;

/**
 * Who sent the request, as the listener saw it (Bun's `server.requestIP`); absent in process. A function of the request
 * as it arrived when reading it costs (serve.ts): it is called only when a handler or a per-address budget asks.
 */
export type Peer = string | ((req: Request) => string | undefined) | undefined;

export const REQUEST_ID_HEADER = "x-request-id";

/** Told when a request was answered, with the request as it arrived (serve.ts counts requests in flight per address). */
export type Settled = (req: Request) => void;

/**
 * `router`: the table's, or one narrowed to a prefix (createPrefixRouter) for the requests Bun's `routes` hand over.
 * `settled` is called once the answer is made, whatever happened — no reaction on the pipeline's promise is needed.
 */
export function createPipeline(gw: Gateway, table: readonly Route[], guards: Guards, router: Router = createRouter(table)): (req: Request, peer?: Peer, settled?: Settled) => Promise<Response> {
  // each row's metric series, made once per pipeline (undefined: no row matched); two pipelines' series of one row
  // count into the same metric children (Counter/Histogram.series)
  const seriesByRoute = new Map<Route | undefined, RouteSeries>();
  const seriesFor = (route: Route | undefined): RouteSeries => {
    let s = seriesByRoute.get(route);
    if (s === undefined) seriesByRoute.set(route, (s = new RouteSeries(gw.metrics, route?.path ?? UNMATCHED)));
    return s;
  };
  return async (incoming, peer, settled) => {
    let req = incoming;
    const started = performance.now();
    const id = requestId(req.headers.get(REQUEST_ID_HEADER));
    const who: Who = {};
    let route: Route | undefined;
    let kind: RouteKind = "api";
    let res: Response;
    try {
      // Bun builds req.url from the Host header and the request target: a Host no URL can hold, or an authority-form
      // target (CONNECT host:port), would make every later URL parse throw — 400 here, never a 500 later. An HTTP/1.0
      // request without Host (a plain health probe) gets the gateway's own origin.
      // Two Host fields (RFC 9112 §3.2: 400) reach us joined by ", " — and no host name holds a comma.
      if (req.headers.get("host")?.includes(",")) {
        throw new AthError("INVALID_REQUEST", "A request carries exactly one Host header field", { field: "host" });
      }
      // An authority-form target (CONNECT host:port): the gateway tunnels nothing, at no target (an empty Allow).
      // req.url is a new string at each read: read once
      let url = req.url;
      if (req.method === "CONNECT" && !url.includes("/")) {
        throw new AthError("METHOD_NOT_ALLOWED", "The gateway does not tunnel: CONNECT is not allowed", undefined, { headers: { allow: "" } });
      }
      if (!URL.canParse(url)) {
        if (url.startsWith("/") && !req.headers.has("host")) {
          req = new Request(gw.opts.baseUrl + url, req);
          url = req.url;
        } else throw new AthError("INVALID_REQUEST", "The Host header or the request target is malformed", { field: "host" });
      }
      const { path, search } = splitTarget(url);
      const m = router.match(req.method, path);
      if (!m.ok) {
        kind = m.kind;
        throw m.error;
      }
      route = m.route;
      kind = route.kind;
      if (gw.tracer.exporting) gw.tracer.annotate({ "http.route": route.path });
      const call = new PipelineCall(gw, req, route, m.params, search, id, incoming, peer, who);
      if (route.limit === "register") await gw.limiter.take("register", call.ip);
      guards[route.auth](call);
      res = await route.handler(call);
    } catch (err) {
      res = boundary(gw, kind, err, id);
    }
    try {
      res = withHeader(res, REQUEST_ID_HEADER, id);
      record(gw, seriesFor(route), req.method, route, res.status, performance.now() - started, id, who);
    } finally {
      settled?.(incoming);
    }
    return res;
  };
}

/**
 * The one error boundary: handlers throw, and what the caller gets depends on the route's kind — browsers an HTML page
 * (`page`), API and proxy clients the ATH JSON error (`api`, `proxy`), OAuth clients RFC 6749's shape (`oauth`), MCP
 * clients a bearer challenge or a JSON-RPC error (`mcp`). A shape thrown at a route of another kind is a bug: it goes
 * out as INTERNAL_ERROR, logged.
 */
export function boundary(gw: Gateway, kind: RouteKind, err: unknown, requestId?: string): Response {
  const log = (msg: string, e: unknown) => gw.log.error(msg, e, requestId === undefined ? undefined : { request_id: requestId });
  if (kind === "page") return errorPage(exposed(err, log));
  if (kind === "oauth") {
    if (err instanceof OAuthError) return oauthErrorResponse(err);
    // the gateway's own limits and malformed bodies, in OAuth's words: invalid_request with their status
    if (isLimitError(err) || (err instanceof AthError && err.code === "INVALID_REQUEST")) {
      return oauthErrorResponse(new OAuthError("invalid_request", (err as AthError).message, (err as AthError).status));
    }
    // a rate limit or a failing store: RFC 6749's temporarily_unavailable, with its status and Retry-After
    const e = exposed(err, log);
    if (e.code === "RATE_LIMITED" || e.code === "SERVICE_UNAVAILABLE") return oauthErrorResponse(new OAuthError("temporarily_unavailable", e.message, e.status, e.headers));
    if (e.code === "INTERNAL_ERROR") return oauthErrorResponse(new OAuthError("server_error", e.message, 500));
    return errorResponse(e, log);
  }
  if (kind === "mcp") {
    if (err instanceof BearerChallenge) return challengeResponse(err);
    if (err instanceof JsonRpcError) return jsonRpcErrorResponse(err);
  }
  return errorResponse(err, log);
}

/** DESIGN §10: 1–128 characters of `[A-Za-z0-9._-]`, else a new one. */
export function requestId(given: string | null): string {
  return given !== null && SANE_ID.test(given) ? given : crypto.randomUUID();
}

// internal

/** Who a request is for, once its handler said (`call.identify`): the access record and the proxy metric name them. */
interface Who {
  client_id?: string;
  provider_id?: string;
}

/**
 * The `Call` a handler gets. A class, not an object literal: its getters and `identify` are shared, not closures made
 * per request. The peer address and the client IP are read when first asked for (Bun's requestIP costs, serve.ts).
 */
class PipelineCall implements Call {
  private address: string | null | undefined;
  private clientIp: string | undefined;
  constructor(
    readonly gw: Gateway,
    readonly req: Request,
    readonly route: Route,
    readonly params: Record<string, string>,
    readonly search: string,
    readonly id: string,
    /** The request as the listener handed it over (the pipeline may have rebuilt `req`): whose peer `peerOf` reads. */
    private readonly incoming: Request,
    private readonly peerOf: Peer,
    private readonly who: Who,
  ) {}

  get peer(): string | null {
    if (this.address === undefined) this.address = (typeof this.peerOf === "function" ? this.peerOf(this.incoming) : this.peerOf) ?? null;
    return this.address;
  }

  get ip(): string {
    return (this.clientIp ??= clientIp(this.gw, this.req, this.peer));
  }

  // a promise only when the budget must lease capacity from the store (ops/rate-limit.ts)
  identify(w: Who): void | Promise<void> {
    const first = w.client_id !== undefined && this.who.client_id === undefined;
    if (w.client_id !== undefined) this.who.client_id = w.client_id;
    if (w.provider_id !== undefined) this.who.provider_id = w.provider_id;
    const budget = this.route.limit;
    if (first && (budget === "auth" || budget === "proxy")) return this.gw.limiter.take(budget, w.client_id!);
  }
}

const SANE_ID = /^[A-Za-z0-9._-]{1,128}$/;

/** Methods named in metrics as themselves; any other is `OTHER` (a client must not mint label values). */
const METHODS = new Set(["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "PROPFIND", "MKCOL", "REPORT", "SEARCH", "QUERY"]);

/** The route label of a request no row matched (404, or 405 on a known path). */
const UNMATCHED = "unmatched";

/** The metrics and the access record of one answered request. */
function record(gw: Gateway, series: RouteSeries, method: string, route: Route | undefined, status: number, ms: number, id: string, who: { client_id?: string; provider_id?: string }) {
  const template = route?.path ?? UNMATCHED;
  const label = METHODS.has(method) ? method : "OTHER";
  series.requests(label, status).inc();
  series.duration.observe(ms / 1000);
  // A provider is named once the token matched it (a configured provider), never from the raw path.
  if (route?.kind === "proxy" || route?.kind === "mcp") series.proxied(who.provider_id ?? "none", status).inc();
  gw.log.access({
    request_id: id,
    method: label,
    route: template,
    status,
    duration_ms: Math.round(ms * 1000) / 1000,
    client_id: who.client_id,
    provider_id: who.provider_id,
  });
}

/**
 * A route's metric series, made once per pipeline and row and kept (issue 41): a request's counts are Map lookups by status and method,
 * no label string joined per request. Every key is from a bounded set — route templates, the METHODS, statuses a
 * Response can carry, configured providers (as `ath_proxy_requests_total` names them: the pipeline's proxy rows only).
 */
class RouteSeries {
  readonly duration: { observe(value: number): void };
  private readonly byStatus = new Map<number, Map<string, { inc(): void }>>();
  private readonly byProvider = new Map<string, Map<number, { inc(): void }>>();
  constructor(
    private readonly metrics: Metrics,
    private readonly template: string,
  ) {
    this.duration = metrics.httpDuration.series([template]);
  }

  // the last answer's series: a route's calls mostly repeat their method and status
  private last: { method: string; status: number; series: { inc(): void } } | null = null;
  private lastProxied: { provider: string; status: number; series: { inc(): void } } | null = null;

  requests(method: string, status: number): { inc(): void } {
    const last = this.last;
    if (last !== null && last.status === status && last.method === method) return last.series;
    let byMethod = this.byStatus.get(status);
    if (byMethod === undefined) this.byStatus.set(status, (byMethod = new Map()));
    let s = byMethod.get(method);
    if (s === undefined) byMethod.set(method, (s = this.metrics.http.series([this.template, method, String(status)])));
    this.last = { method, status, series: s };
    return s;
  }

  proxied(provider: string, status: number): { inc(): void } {
    const last = this.lastProxied;
    if (last !== null && last.status === status && last.provider === provider) return last.series;
    let byStatus = this.byProvider.get(provider);
    if (byStatus === undefined) this.byProvider.set(provider, (byStatus = new Map()));
    let s = byStatus.get(status);
    if (s === undefined) byStatus.set(status, (s = this.metrics.proxy.series([provider, String(status)])));
    this.lastProxied = { provider, status, series: s };
    return s;
  }
}

/** The client IP: the listener's peer, or under --trust-proxy the last X-Forwarded-For hop (what our proxy saw). */
function clientIp(gw: Gateway, req: Request, peer: string | null): string {
  if (gw.opts.trustProxy) {
    const xff = req.headers.get("x-forwarded-for");
    if (xff) {
      const last = xff.slice(xff.lastIndexOf(",") + 1).trim();
      if (last !== "") return last.slice(0, 64);
    }
  }
  return peer ?? "unknown";
}

/** Sets a header on the response; a response whose headers are frozen is copied first. */
function withHeader(res: Response, name: string, value: string): Response {
  try {
    res.headers.set(name, value);
    return res;
  } catch {
    const headers = new Headers(res.headers);
    headers.set(name, value);
    return new Response(res.body, { status: res.status, statusText: res.statusText, headers });
  }
}
