/**
 * The gateway in process: createGateway over an in-memory SQLite store, with the sandbox provider (`demo`) as the
 * upstream and a clock the test moves. Every request — the agent's, the browser's, and the gateway's own calls to the
 * provider — goes through `app.fetch`: no port, no process, no sleeping for expiry.
 */
import { createGateway, type App } from "../../src/gateway/app.ts";
import type { Gateway } from "../../src/gateway/context.ts";
import { openSqliteStore } from "../../src/store/index.ts";
import { Browser } from "./browser.ts";

export const BASE = "https://gateway.test";
export const ADMIN_TOKEN = "admin_in_process_token";

/** A clock that only moves when told to. */
export class TestClock {
  constructor(public ms = Date.now()) {}
  readonly now = () => this.ms;
  advance(seconds: number): void {
    this.ms += seconds * 1000;
  }
}

export interface InProcess {
  app: App;
  gw: Gateway;
  clock: TestClock;
  /** Sends a request to the gateway: a path (relative to BASE) or a Request. */
  fetch(input: string | Request, init?: RequestInit): Promise<Response>;
  /** A browser whose network is this gateway. */
  browser(): Browser;
  close(): Promise<void>;
}

export async function inProcessGateway(o: { tokenTtlSeconds?: number; sessionTtlSeconds?: number } = {}): Promise<InProcess> {
  const clock = new TestClock();
  let app: App | undefined;
  const route = (req: Request): Promise<Response> => {
    if (!req.url.startsWith(`${BASE}/`)) throw new Error(`in-process gateway: no network for ${req.url}`);
    return app!.fetch(req);
  };
  app = await createGateway(
    {
      baseUrl: BASE,
      version: "0.0.0-test",
      dev: true,
      approval: "auto",
      sessionTtlSeconds: o.sessionTtlSeconds ?? 600,
      tokenTtlSeconds: o.tokenTtlSeconds ?? 3600,
      strictScopes: false,
      upstreamTimeoutMs: 5_000,
      providers: {},
      adminToken: ADMIN_TOKEN,
      masterKey: crypto.getRandomValues(new Uint8Array(32)),
      demo: true,
    },
    { store: openSqliteStore(":memory:"), fetch: (input, init) => route(new Request(input, init)), clock: clock.now },
  );
  const running = app;
  return {
    app: running,
    gw: running.gateway,
    clock,
    fetch: (input, init) => route(typeof input === "string" ? new Request(BASE + input, init) : input),
    browser: () => new Browser(route),
    close: () => running.close(),
  };
}
