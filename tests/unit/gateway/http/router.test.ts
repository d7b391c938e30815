/** The router through the whole pipeline, in process: unknown paths are 404 and known paths with another method 405, as JSON. */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { call } from "../../../helpers/agent.ts";
import { expectError } from "../../../helpers/expect-error.ts";
import { BASE, inProcessGateway, type InProcess } from "../../../helpers/in-process.ts";

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
