/**
 * The CLI in process against the real gateway in process: `createGateway` over in-memory SQLite with the sandbox
 * provider (`demo`, tests/helpers/in-process.ts) is the CLI's fetch, so every command meets the gateway's own
 * routes, checks and answers — attestation audiences, sessions, codes, the proxy's scope rules — with no port, no
 * process and no fake. Per test: a fresh home and gateway; `ath(argv, tty)`; the steps most tests start from.
 */
import { afterEach, beforeEach, expect } from "bun:test";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { BASE, consented, inProcessGateway, type InProcess, type InProcessOptions } from "./in-process.ts";
import { runAth, tempHome, type RunResult } from "./cli-harness.ts";

export { BASE as GATEWAY };

export function cliOnGateway(o: InProcessOptions = {}) {
  let current: { home: { dir: string; cleanup: () => Promise<void> }; g: InProcess } | undefined;
  beforeEach(async () => {
    current = { home: await tempHome(), g: await inProcessGateway(o) };
  });
  afterEach(async () => {
    await current?.g.close();
    await current?.home.cleanup();
  });
  const live = () => {
    if (!current) throw new TypeError("cliOnGateway is used outside a test");
    return current;
  };
  const fetch = (input: string | URL | Request, init?: RequestInit) => live().g.fetch(new Request(input, init));
  function ath(argv: string[], tty = false): Promise<RunResult> {
    return runAth(live().home.dir, argv, { fetch: fetch as never, tty });
  }
  return {
    get home() {
      return live().home;
    },
    get g() {
      return live().g;
    },
    ath,
    /** `ath register` for the sandbox's notes:read (and `scopes`); the test fails unless it exits 0. */
    async registered(scopes = "notes:read"): Promise<void> {
      expect((await ath(["register", "-g", BASE, "--provider", "demo", "--scopes", scopes])).code).toBe(0);
    },
    /** Registered, authorized (`--no-wait`), the person consents in the gateway's pages, and the code exchanged. */
    async authorized(scopes = "notes:read"): Promise<string> {
      await this.registered(scopes);
      const a = await ath(["authorize", "-g", BASE, "--provider", "demo", "--scopes", scopes, "--no-wait", "--format", "json"]);
      expect(a.code).toBe(0);
      const { authorization_url, ath_session_id } = JSON.parse(a.stdout) as { authorization_url: string; ath_session_id: string };
      const code = await consented(live().g.browser(), authorization_url);
      expect((await ath(["token", "-g", BASE, "--code", code])).code).toBe(0);
      return ath_session_id;
    },
    /** credentials.json, parsed. */
    async credentials() {
      return JSON.parse(await readFile(join(live().home.dir, "credentials.json"), "utf8"));
    },
  };
}
