/** The routes table of the gateway and its one error boundary — nothing else. */
import { AthError, PATHS } from "../protocol/index.ts";
import * as admin from "./admin/providers.ts";
import * as adminAgents from "./admin/agents.ts";
import { authorize } from "./endpoints/authorize.ts";
import { callback } from "./endpoints/callback.ts";
import { showConsent, submitConsent } from "./endpoints/consent.ts";
import type { Gateway } from "./context.ts";
import { discovery, health } from "./endpoints/discovery.ts";
import { errorPage } from "./pages/errors.ts";
import { errorResponse } from "./http.ts";
import { proxy } from "./proxy/handler.ts";
import { register } from "./endpoints/register.ts";
import { revoke } from "./endpoints/revoke.ts";
import { token } from "./endpoints/token.ts";

type Handler = (gw: Gateway, req: Request, param: string) => Promise<Response> | Response;
interface Route {
  /** Exact path, or a prefix ending in "/" whose remainder is passed as `param` (no further slashes). */
  path: string;
  prefix?: boolean;
  /** Browser-facing routes answer errors with HTML pages. */
  html?: boolean;
  methods: Partial<Record<string, Handler>>;
}

const ROUTES: Route[] = [
  { path: PATHS.discovery, methods: { GET: (gw) => discovery(gw) } },
  { path: PATHS.health, methods: { GET: (gw) => health(gw) } },
  { path: PATHS.register, methods: { POST: (gw, req) => register(gw, req) } },
  { path: PATHS.authorize, methods: { POST: (gw, req) => authorize(gw, req) } },
  { path: `${PATHS.consent}/`, prefix: true, html: true, methods: { GET: showConsent, POST: submitConsent } },
  { path: PATHS.callback, html: true, methods: { GET: (gw, req) => callback(gw, req) } },
  { path: PATHS.token, methods: { POST: (gw, req) => token(gw, req) } },
  { path: PATHS.revoke, methods: { POST: (gw, req) => revoke(gw, req) } },
  { path: PATHS.adminProviders, methods: { GET: (gw, req) => admin.listProviders(gw, req), POST: (gw, req) => admin.createProvider(gw, req) } },
  { path: `${PATHS.adminProviders}/`, prefix: true, methods: { GET: admin.getProvider, PUT: admin.putProvider, DELETE: admin.deleteProvider } },
  { path: PATHS.adminAgents, methods: { GET: (gw, req) => adminAgents.listAgents(gw, req) } },
  { path: `${PATHS.adminAgents}/`, prefix: true, methods: { GET: adminAgents.getAgent, PATCH: adminAgents.patchAgent } },
];

export async function handle(gw: Gateway, req: Request): Promise<Response> {
  let html = false;
  try {
    const url = new URL(req.url);
    // The proxy reads the raw request-target: its path must not be normalised or decoded before checking.
    const target = rawPath(req.url);
    if (target.startsWith(PATHS.proxy + "/")) {
      const rest = target.slice(PATHS.proxy.length + 1);
      const slash = rest.indexOf("/");
      const providerId = decodePart(slash < 0 ? rest : rest.slice(0, slash));
      return await proxy(gw, req, providerId, slash < 0 ? "" : rest.slice(slash + 1), url.search);
    }
    if (gw.demo && url.pathname.startsWith("/demo/")) return await gw.demo.fetch(req);
    for (const route of ROUTES) {
      const param = match(route, url.pathname);
      if (param === null) continue;
      html = route.html === true;
      const handler = route.methods[req.method] ?? (req.method === "HEAD" ? route.methods.GET : undefined);
      if (!handler) {
        throw new AthError("METHOD_NOT_ALLOWED", `${req.method} is not allowed on ${url.pathname}`, undefined, {
          headers: { allow: Object.keys(route.methods).join(", ") },
        });
      }
      return await handler(gw, req, param);
    }
    throw new AthError("NOT_FOUND", `No route for ${req.method} ${url.pathname}`);
  } catch (err) {
    if (html && err instanceof AthError) return errorPage(err.code, err.message);
    if (html && !(err instanceof AthError)) {
      gw.log.error("internal error", err);
      return errorPage("INTERNAL_ERROR");
    }
    return errorResponse(err, (msg, e) => gw.log.error(msg, e));
  }
}

// internal

function match(route: Route, pathname: string): string | null {
  if (!route.prefix) return pathname === route.path ? "" : null;
  if (!pathname.startsWith(route.path)) return null;
  const param = pathname.slice(route.path.length);
  return param !== "" && !param.includes("/") ? decodePart(param) : null;
}

function decodePart(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    throw new AthError("INVALID_REQUEST", "Malformed percent-encoding in the path", { field: "path" });
  }
}

/** The path of the request-target as sent (Bun keeps it un-normalised in req.url). */
function rawPath(requestUrl: string): string {
  const afterScheme = requestUrl.indexOf("//");
  const pathStart = requestUrl.indexOf("/", afterScheme + 2);
  if (pathStart < 0) return "/";
  const q = requestUrl.indexOf("?", pathStart);
  const h = requestUrl.indexOf("#", pathStart);
  const end = Math.min(q < 0 ? requestUrl.length : q, h < 0 ? requestUrl.length : h);
  return requestUrl.slice(pathStart, end);
}
