/** The router through the whole pipeline, in process: unknown paths are 404 and known paths with another method 405, as JSON. */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { call } from "../../../helpers/agent.ts";
import { expectError } from "../../../helpers/expect-error.ts";
import { BASE, inProcessGateway, type InProcess } from "../../../helpers/in-process.ts";
import type { Route } from "../../../../src/gateway/context.ts";
import { createPrefixRouter, createRouter, type Router } from "../../../../src/gateway/http/router.ts";
import { fastPrefixes, routeTable } from "../../../../src/gateway/routes.ts";

let g: InProcess;
beforeEach(async () => {
  g = await inProcessGateway();
});
afterEach(() => g.close());

describe("routing", () => {
  test("unknown routes are 404 NOT_FOUND", async () => {
    for (const path of ["/nope", "/ath", "/ath/unknown", "/ath/admin", "/.well-known/other.json", "/ath/agents/register/extra"]) {
      expectError(await call(`${BASE}${path}`, { fetch: g.fetch }), "NOT_FOUND");
    }
  });

  test("wrong methods are 405 METHOD_NOT_ALLOWED with the Allow header", async () => {
    for (const [method, path, allow] of [
      ["GET", "/ath/agents/register", "POST"],
      ["GET", "/ath/authorize", "POST"],
      ["GET", "/ath/token", "POST"],
      ["PUT", "/ath/token", "POST"],
      ["DELETE", "/ath/revoke", "POST"],
      ["POST", "/.well-known/ath.json", "GET"],
      ["POST", "/health", "GET"],
    ] as const) {
      const r = await call(`${BASE}${path}`, { method, fetch: g.fetch });
      expectError(r, "METHOD_NOT_ALLOWED");
      expect({ method, path, allow: r.headers.get("allow") }).toEqual({ method, path, allow });
    }
  });
});

describe("templates, matched part by part", () => {
  const noop = async () => new Response(null);
  const route = (path: string) => ({ method: "GET", path, kind: "api", auth: "none", handler: noop }) as unknown as Route;
  const router = createRouter([route("/a/{x}/*"), route("/b/{x}"), route("/c/{x}/d")]);
  const params = (path: string) => {
    const m = router.match("GET", path);
    return m.ok ? m.params : m.error.code;
  };

  test("a final * takes the rest as sent, or nothing", () => {
    expect(params("/a/v")).toEqual({ x: "v", "*": "" });
    expect(params("/a/v/")).toEqual({ x: "v", "*": "" });
    expect(params("/a/v/b/c")).toEqual({ x: "v", "*": "b/c" });
    expect(params("/a/v//b/")).toEqual({ x: "v", "*": "/b/" });
    expect(params("/a/v/%2e%2e/x")).toEqual({ x: "v", "*": "%2e%2e/x" });
  });

  test("without *, exactly the template's parts; a {param} is never empty", () => {
    expect(params("/b/v")).toEqual({ x: "v" });
    expect(params("/b/v/")).toBe("NOT_FOUND");
    expect(params("/b/v/w")).toBe("NOT_FOUND");
    expect(params("/b/")).toBe("NOT_FOUND");
    expect(params("/a/")).toBe("NOT_FOUND");
    expect(params("/a//x")).toBe("NOT_FOUND");
    expect(params("/c/v/d")).toEqual({ x: "v" });
    expect(params("/c/v/dd")).toBe("NOT_FOUND");
    expect(params("/c/v/")).toBe("NOT_FOUND");
    expect(params("/c/v")).toBe("NOT_FOUND");
  });
});

describe("the routers of Bun's native prefixes (serve.ts routes, issue 41)", () => {
  const answerOf = (router: Router, method: string, path: string) => {
    try {
      const m = router.match(method, path);
      return m.ok ? { route: m.route.name, params: m.params } : { kind: m.kind, code: m.error.code, message: m.error.message, headers: m.error.headers };
    } catch (e) {
      return { thrown: String(e) };
    }
  };
  const table = routeTable({ demo: true, native: true });
  const whole = createRouter(table);
  const PATHS_TRIED = [
    "/ath/proxy/gmail/v1/users/me",
    "/ath/proxy/gmail/",
    "/ath/proxy/gmail",
    "/ath/proxy/",
    "/ath/proxy/g%6Dail/x",
    "/ath/proxy/%00/x",
    "/ath/proxy/gmail/a%2Fb/../c?x",
    "/ath/proxy//x",
    "/ath/proxy/gmail/",
    "/ath/proxy/gmail//",
    "/ath/proxy/gmail/x%00y",
    "/ath/proxy/gmail/%41/b%2F",
    "/ath/proxy/gm%ail/x",
    "/ath/proxy/gm%/x",
    "/api/v1/things",
    "/api/",
    "/mcp/notion",
    "/mcp/g/work",
    "/mcp/",
    "/mcp/notion/extra",
    "/ath/agents/register",
    "/",
  ];
  for (const prefix of fastPrefixes({ native: true })) {
    test(`${prefix}: every path answers as the whole table's router answers`, () => {
      const narrowed = createPrefixRouter(table, prefix);
      for (const path of PATHS_TRIED) {
        for (const method of ["GET", "POST", "DELETE", "PROPFIND", "HEAD"]) {
          expect({ path, method, answer: answerOf(narrowed, method, path) }).toEqual({ path, method, answer: answerOf(whole, method, path) });
        }
      }
    });
  }
});
