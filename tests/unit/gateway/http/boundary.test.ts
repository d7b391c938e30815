/**
 * The pipeline's error boundary in process (http/pipeline.ts, http/response.ts; DESIGN §14): a store that fails is
 * 503 SERVICE_UNAVAILABLE with Retry-After — JSON for API routes, the HTML error page for browser routes — never a
 * success and never a 500; once the store answers again, so does the gateway.
 */
import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import { PATHS } from "../../../../src/protocol/index.ts";
import { StoreUnavailableError } from "../../../../src/store/errors.ts";
import { openSqliteStore } from "../../../../src/store/index.ts";
import type { Store } from "../../../../src/store/types.ts";
import { attest, makeAgent } from "../../../helpers/attestations.ts";
import { authorized, BASE, inProcessGateway, registered, type InProcess } from "../../../helpers/in-process.ts";

let failing = false;
/** An in-memory store whose every call fails, as a full disk would, while `failing` is set. */
function flakyStore(): Store {
  const inner = openSqliteStore(":memory:");
  return new Proxy(inner, {
    get(target, key) {
      const value = (target as unknown as Record<PropertyKey, unknown>)[key];
      if (typeof value !== "function" || key === "close" || key === "changes") return typeof value === "function" ? value.bind(target) : value;
      return (...args: unknown[]) =>
        failing ? Promise.reject(new StoreUnavailableError(new Error("SQLITE_FULL: database or disk is full"))) : (value as (...a: unknown[]) => unknown).apply(target, args);
    },
  });
}

let g: InProcess;
beforeEach(async () => {
  failing = false;
  g = await inProcessGateway({ store: flakyStore() });
});
afterEach(async () => {
  failing = false;
  await g.close();
});

describe("the error boundary and a failing store", () => {
  test("an API route answers 503 SERVICE_UNAVAILABLE, Retry-After: 1, X-ATH-Error — and works again once the store does", async () => {
    const agent = await makeAgent();
    const client = await registered(g, agent);
    const body = async () =>
      JSON.stringify({ client_id: client.client_id, agent_attestation: await attest(agent, BASE), provider_id: "demo", scopes: ["notes:read"], state: "in-process-state-0123456789" });
    failing = true;
    const res = await g.fetch(PATHS.authorize, { method: "POST", headers: { "content-type": "application/json" }, body: await body() });
    expect({
      status: res.status,
      retryAfter: res.headers.get("retry-after"),
      marked: res.headers.get("x-ath-error"),
      body: await res.json(),
    }).toEqual({
      status: 503,
      retryAfter: "1",
      marked: "SERVICE_UNAVAILABLE",
      body: { code: "SERVICE_UNAVAILABLE", message: "The gateway cannot record this right now; nothing was changed — retry shortly" },
    });
    failing = false;
    const again = await g.fetch(PATHS.authorize, { method: "POST", headers: { "content-type": "application/json" }, body: await body() });
    expect(again.status).toBe(200);
  });

  test("a browser route answers the 503 error page, with Retry-After", async () => {
    const agent = await makeAgent();
    const { url } = await authorized(g, agent, await registered(g, agent));
    failing = true;
    const res = await g.fetch(new Request(url));
    expect({ status: res.status, type: res.headers.get("content-type"), retryAfter: res.headers.get("retry-after") }).toEqual({
      status: 503,
      type: "text/html; charset=utf-8",
      retryAfter: "1",
    });
    expect(await res.text()).toContain("The gateway cannot record your answer right now");
  });
});
