/**
 * The router: matches a request's method and raw path against the route table it is given (it imports no handler).
 * Paths are matched as sent — the proxy must see its path un-normalised and undecoded — and `{param}` values are
 * percent-decoded here, once.
 */
import { AthError } from "../../protocol/index.ts";
import type { Route, RouteKind } from "../context.ts";

export type Match =
  | { ok: true; route: Route; params: Record<string, string> }
  | { ok: false; error: AthError; kind: RouteKind };

export interface Router {
  match(method: string, path: string): Match;
}

export function createRouter(table: readonly Route[]): Router {
  const exact = new Map<string, Route[]>();
  const templated: Compiled[] = [];
  for (const route of table) {
    if (!route.path.includes("{") && !route.path.endsWith("*")) {
      exact.set(route.path, [...(exact.get(route.path) ?? []), route]);
    } else {
      templated.push(compile(route));
    }
  }
  return {
    match(method, path) {
      let candidates: { route: Route; params: Record<string, string> }[] = (exact.get(path) ?? []).map((route) => ({ route, params: {} }));
      if (candidates.length === 0) {
        let parts: string[] | undefined; // split once, for the templates whose literal prefix the path has
        for (const c of templated) {
          if (!path.startsWith(c.literalPrefix)) continue;
          const params = c.match((parts ??= path.split("/")));
          if (params) candidates.push({ route: c.route, params });
        }
      }
      if (candidates.length === 0) return { ok: false, kind: "api", error: new AthError("NOT_FOUND", `No route for ${method} ${printable(path)}`) };
      const found = pick(candidates, method) ?? (method === "HEAD" ? pick(candidates, "GET") : undefined);
      if (found) return { ok: true, route: found.route, params: decodeParams(found.params) };
      const allow = [...new Set(candidates.map((c) => c.route.method))].join(", ");
      // JSON on every path, pages included (DESIGN §14 "Requests the HTTP grammar forbids"): no browser sends it
      return {
        ok: false,
        kind: "api",
        error: new AthError("METHOD_NOT_ALLOWED", `${method} is not allowed on ${printable(path)}`, undefined, { headers: { allow } }),
      };
    },
  };
}

/** The path and the query string (with its `?`) of a request URL, exactly as sent: no normalising, no decoding. */
export function splitTarget(requestUrl: string): { path: string; search: string } {
  const afterScheme = requestUrl.indexOf("//");
  const pathStart = requestUrl.indexOf("/", afterScheme < 0 ? 0 : afterScheme + 2);
  if (pathStart < 0) return { path: "/", search: "" };
  const hash = requestUrl.indexOf("#", pathStart);
  const end = hash < 0 ? requestUrl.length : hash;
  const q = requestUrl.indexOf("?", pathStart);
  return q < 0 || q > end
    ? { path: requestUrl.slice(pathStart, end), search: "" }
    : { path: requestUrl.slice(pathStart, q), search: requestUrl.slice(q, end) };
}

// internal

interface Compiled {
  route: Route;
  /** What every path this template matches starts with. */
  literalPrefix: string;
  /** The path's `/`-separated parts (it starts with literalPrefix) → the template's params, or null. */
  match(parts: string[]): Record<string, string> | null;
}

/** `/a/{x}/b` matches one segment per `{x}`; a final `*` takes the rest (`/a/{x}/*` also matches `/a/v`, rest ""). */
function compile(route: Route): Compiled {
  const rest = route.path.endsWith("/*");
  const segments = (rest ? route.path.slice(0, -2) : route.path).split("/");
  const literalPrefix = route.path.slice(0, route.path.indexOf("{") < 0 ? route.path.length - 1 : route.path.indexOf("{"));
  return {
    route,
    literalPrefix,
    match(parts) {
      if (parts.length < segments.length || (!rest && parts.length !== segments.length)) return null;
      const params: Record<string, string> = {};
      for (let i = 0; i < segments.length; i++) {
        const s = segments[i]!;
        const p = parts[i]!;
        if (s.startsWith("{")) {
          if (p === "") return null;
          params[s.slice(1, -1)] = p;
        } else if (s !== p) return null;
      }
      if (rest) params["*"] = parts.slice(segments.length).join("/");
      return params;
    },
  };
}

function pick<T extends { route: Route }>(candidates: T[], method: string): T | undefined {
  return candidates.find((c) => c.route.method === method) ?? candidates.find((c) => c.route.method === "*");
}

function decodeParams(params: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(params)) {
    if (k === "*") {
      out[k] = v;
      continue;
    }
    try {
      out[k] = v.includes("%") ? decodeURIComponent(v) : v; // nothing to decode in most values: no call
    } catch {
      throw new AthError("INVALID_REQUEST", "Malformed percent-encoding in the path", { field: "path" });
    }
    // no identifier contains NUL, and PostgreSQL text cannot even be asked for one
    if (out[k]!.includes("\0")) throw new AthError("INVALID_REQUEST", "The path must not contain U+0000 (NUL)", { field: "path" });
  }
  return out;
}

/** A path for an error message: bounded, control characters replaced. */
function printable(path: string): string {
  const short = path.length > 200 ? `${path.slice(0, 200)}…` : path;
  return short.replace(/[\u0000-\u001f\u007f]/g, "\ufffd");
}
