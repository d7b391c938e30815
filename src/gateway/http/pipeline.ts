/**
 * The request pipeline: route → the row's caller check → handler, with the one error boundary. Everything that
 * applies to requests by route row (request ids, access log, metrics, rate and body limits) is applied here, once,
 * from the row's fields — never inside handlers.
 */
import { AthError } from "../../protocol/index.ts";
import type { Call, Gateway, Route, RouteAuth, RouteKind } from "../context.ts";
import { errorPage } from "../pages/errors.ts";
import { errorResponse, exposed } from "./response.ts";
import { createRouter, splitTarget } from "./router.ts";

/** The caller checks named by the table's `auth` column; they throw an AthError to refuse. */
export type Guards = Record<RouteAuth, (call: Call) => void>;

export function createPipeline(gw: Gateway, table: readonly Route[], guards: Guards): (req: Request, peer?: string) => Promise<Response> {
  const router = createRouter(table);
  return async (incoming, peer) => {
    let kind: RouteKind = "api";
    let req = incoming;
    try {
      // Bun builds req.url from the Host header and the request target: a Host no URL can hold, or an authority-form
      // target (CONNECT host:port), would make every later URL parse throw — 400 here, never a 500 later. An HTTP/1.0
      // request without Host (a plain health probe) gets the gateway's own origin.
      if (!URL.canParse(req.url)) {
        if (req.url.startsWith("/") && !req.headers.has("host")) req = new Request(gw.opts.baseUrl + req.url, req);
        else throw new AthError("INVALID_REQUEST", "The Host header or the request target is malformed", { field: "host" });
      }
      const { path, search } = splitTarget(req.url);
      const m = router.match(req.method, path);
      if (!m.ok) {
        kind = m.kind;
        throw m.error;
      }
      kind = m.route.kind;
      const call: Call = { gw, req, route: m.route, params: m.params, search, peer: peer ?? null };
      guards[m.route.auth](call);
      return await m.route.handler(call);
    } catch (err) {
      return boundary(gw, kind, err);
    }
  };
}

/** The error boundary: handlers throw; browsers get an HTML page, API and proxy clients the JSON error body. */
export function boundary(gw: Gateway, kind: RouteKind, err: unknown): Response {
  const log = (msg: string, e: unknown) => gw.log.error(msg, e);
  if (kind === "page") return errorPage(exposed(err, log));
  return errorResponse(err, log);
}
