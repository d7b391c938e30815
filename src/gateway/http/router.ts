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
      const exactRoutes = exact.get(path);
      let candidates: { route: Route; params: Record<string, string> }[] | undefined = exactRoutes?.map((route) => ({ route, params: {} }));
      if (candidates === undefined) {
        for (const c of templated) {
          if (!path.startsWith(c.literalPrefix)) continue;
          const params = c.match(path);
          if (params) (candidates ??= []).push({ route: c.route, params });
        }
      }
      if (candidates === undefined) return { ok: false, kind: "api", error: new AthError("NOT_FOUND", `No route for ${method} ${printable(path)}`) };
      // one candidate answering this method (every proxied call): no search
      const only = candidates.length === 1 ? candidates[0]! : undefined;
      const found = only !== undefined && (only.route.method === method || only.route.method === "*") ? only : pick(candidates, method) ?? (method === "HEAD" ? pick(candidates, "GET") : undefined);
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

/**
 * A router for the paths under `prefix` only (the prefixes Bun.serve's native `routes` hand over, serve.ts): the rows
 * that can match such a path and no other, so it answers exactly as `createRouter(table)` would — for a path under
 * the prefix. Anything else (Bun normalises `..` before its match; a miss, whose 404 or 405 names every row) goes to the
 * whole table's router.
 */
export function createPrefixRouter(table: readonly Route[], prefix: string): Router {
  const whole = createRouter(table);
  const rows = table.filter((r) => {
    const literal = literalPrefixOf(r.path);
    return literal === r.path ? r.path.startsWith(prefix) : literal.startsWith(prefix) || prefix.startsWith(literal);
  });
  const narrowed = createRouter(rows);
  const one = singleRow(rows, prefix);
  return {
    match(method, path) {
      if (!path.startsWith(prefix)) return whole.match(method, path);
      if (one !== null) {
        // the one row `prefix{name}/*` answering every method (the proxy's): its two params cut out where they are, when
        // the segment needs no decoding — what the general match would give, without its walk (issue 41)
        const slash = path.indexOf("/", prefix.length);
        const percent = path.indexOf("%", prefix.length);
        if (slash > prefix.length && (percent < 0 || percent > slash) && path.lastIndexOf("\0", slash) < 0) {
          return { ok: true, route: one.route, params: { [one.name]: path.slice(prefix.length, slash), "*": path.slice(slash + 1) } };
        }
      }
      const m = narrowed.match(method, path);
      return m.ok ? m : whole.match(method, path);
    },
  };
}

/**
 * The one row that can match a path under `prefix` (`rows`: those that can), when it is `prefix{name}/*` for every
 * method (else null): the proxy's row under `/ath/proxy/`.
 */
function singleRow(rows: readonly Route[], prefix: string): { route: Route; name: string } | null {
  const route = rows.length === 1 ? rows[0]! : undefined;
  const m = route && route.method === "*" ? /^\{([a-z_]+)\}\/\*$/.exec(route.path.slice(prefix.length)) : null;
  return route && m && route.path.startsWith(prefix) ? { route, name: m[1]! } : null;
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
  /** The path (it starts with literalPrefix) → the template's params, or null. */
  match(path: string): Record<string, string> | null;
}

/** `/a/{x}/b` matches one segment per `{x}`; a final `*` takes the rest (`/a/{x}/*` also matches `/a/v`, rest ""). */
function compile(route: Route): Compiled {
  const rest = route.path.endsWith("/*");
  const segments = (rest ? route.path.slice(0, -2) : route.path).split("/");
  const literalPrefix = literalPrefixOf(route.path);
  return {
    route,
    literalPrefix,
    // Walks the path's `/`-separated parts in place (a proxied path can be long: it is not split into an array).
    match(path) {
      const params: Record<string, string> = {};
      let pos = 0; // where the next part starts; past the end once the last part was read
      for (let i = 0; i < segments.length; i++) {
        if (pos > path.length) return null; // fewer parts than the template has
        const slash = path.indexOf("/", pos);
        const end = slash < 0 ? path.length : slash;
        const s = segments[i]!;
        if (s.startsWith("{")) {
          if (end === pos) return null;
          params[s.slice(1, -1)] = path.slice(pos, end);
        } else if (s.length !== end - pos || !path.startsWith(s, pos)) return null;
        pos = end + 1;
      }
      if (rest) params["*"] = pos > path.length ? "" : path.slice(pos);
      else if (pos <= path.length) return null; // more parts than the template has
      return params;
    },
  };
}

/** What every path a row matches starts with: the row's path up to its first `{param}` or final `*` (an exact row: itself). */
function literalPrefixOf(path: string): string {
  const brace = path.indexOf("{");
  if (brace >= 0) return path.slice(0, brace);
  return path.endsWith("*") ? path.slice(0, -1) : path;
}

function pick<T extends { route: Route }>(candidates: T[], method: string): T | undefined {
  return candidates.find((c) => c.route.method === method) ?? candidates.find((c) => c.route.method === "*");
}

/** Decodes in place: each match builds its own params. */
function decodeParams(params: Record<string, string>): Record<string, string> {
  const out = params;
  for (const k in params) {
    const v = params[k]!;
    if (k === "*") continue;
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
