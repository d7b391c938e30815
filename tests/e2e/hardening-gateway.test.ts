/**
 * DESIGN §14, the gateway side of "Secrets an operator chooses are strong" and "Requests the HTTP grammar forbids",
 * through the compiled binary: an admin or metrics token under 24 characters stops the start (flag or variable alike);
 * wrong admin tokens are limited per client IP (10 in a fixed 60 s window, then 429 whatever that IP sends, other IPs
 * untouched) — the clients are other loopback addresses (127.0.0.2, 127.0.0.3) over raw sockets; two Host fields are
 * 400; CONNECT and methods no row routes are a JSON 405 with Allow on every /ath/* path of the route table.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { routeTable } from "../../src/gateway/routes.ts";
import { ATH_BIN, ensureBinary } from "../helpers/cli-binary.ts";
import { startGateway, type Gateway } from "../helpers/gateway.ts";
import { rawRequest, type RawResponse } from "../helpers/raw-http.ts";

const PROVIDER = {
  display_name: "Mail",
  available_scopes: ["mail:read"],
  authorize_endpoint: "https://auth.example/authorize",
  token_endpoint: "https://auth.example/token",
  api_base_url: "https://api.example",
  client_id: "client",
  client_secret: "secret",
};

let gw: Gateway;
const dirs: string[] = [];

beforeAll(async () => {
  ensureBinary();
  gw = await startGateway({ binary: ATH_BIN, providers: { mail: PROVIDER } });
}, 60_000);
afterAll(async () => {
  await gw?.cleanup();
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

/** Runs `ath serve` to its end (a start that must fail). */
async function serveFails(args: string[], env: Record<string, string> = {}) {
  const home = await mkdtemp(join(tmpdir(), "ath-harden-"));
  dirs.push(home);
  const p = Bun.spawn([ATH_BIN, "serve", "--port", "0", "--data-dir", join(home, "data"), ...args], {
    env: { ...process.env, ATH_HOME: home, NO_COLOR: "1", ...env },
    stdout: "pipe",
    stderr: "pipe",
  });
  const timer = setTimeout(() => p.kill("SIGKILL"), 20_000);
  const [code, out, err] = await Promise.all([p.exited, new Response(p.stdout).text(), new Response(p.stderr).text()]);
  clearTimeout(timer);
  return { code, out, err };
}

function expectJsonError(r: RawResponse, status: number, code: string) {
  expect({ status: r.status, type: r.headers["content-type"], code: JSON.parse(r.body).code }).toEqual({ status, type: "application/json", code });
}

describe("operator secrets shorter than 24 characters stop the start", () => {
  const SHORT = "short-token-23-chars-xx"; // 23
  test("--admin-token and ATH_ADMIN_TOKEN alike: exit 2, naming the flag and the length, never the token", async () => {
    for (const [args, env] of [[["--admin-token", SHORT], {}], [[], { ATH_ADMIN_TOKEN: SHORT }]] as const) {
      const r = await serveFails([...args], env);
      expect({ code: r.code, listening: r.out.includes("listening on") }).toEqual({ code: 2, listening: false });
      expect(r.err).toContain("--admin-token (or ATH_ADMIN_TOKEN) must be at least 24 characters, got 23");
      expect(r.err + r.out).not.toContain(SHORT);
    }
  });

  test("--metrics-token and ATH_METRICS_TOKEN alike", async () => {
    for (const [args, env] of [[["--metrics-token", "m"], {}], [[], { ATH_METRICS_TOKEN: "m" }]] as const) {
      const r = await serveFails([...args], env);
      expect(r.code).toBe(2);
      expect(r.err).toContain("--metrics-token (or ATH_METRICS_TOKEN) must be at least 24 characters, got 1");
    }
  });

  test("24 characters start (the gateway of this file runs with a longer one)", async () => {
    const ok = await startGateway({ binary: ATH_BIN, providers: { mail: PROVIDER }, adminToken: "x".repeat(24), extraArgs: ["--metrics-token", "m".repeat(24)] });
    try {
      const r = await rawRequest(ok.port, "GET", "/ath/admin/agents", { "x-ath-user-token": "x".repeat(24) });
      expect(r.status).toBe(200);
    } finally {
      await ok.cleanup();
    }
  });
});

/**
 * The wrong-token window is fixed, aligned to the minute of the gateway's clock (this machine's): a run whose requests
 * straddle a minute's end proves nothing either way. Such a run that failed is run again at once, from fresh client
 * addresses, in the new window with nearly all of it ahead — instead of sleeping to the next minute before every run.
 */
async function inOneWindow(addresses: string[][], run: (...from: string[]) => Promise<void>): Promise<void> {
  const minute = () => Math.floor(Date.now() / 60_000);
  for (const [i, from] of addresses.entries()) {
    const started = minute();
    try {
      return await run(...from);
    } catch (err) {
      if (minute() === started || i === addresses.length - 1) throw err;
    }
  }
}

describe("wrong admin tokens are rate-limited per client IP", () => {
  test("10 wrong in a window → 401 each; then 429 with Retry-After for that IP, even with the right token; another IP is served", async () => {
    const admin = (token: string, from: string) => rawRequest(gw.port, "GET", "/ath/admin/agents", { "x-ath-user-token": token }, "", from);
    await inOneWindow([["127.0.0.2", "127.0.0.3"], ["127.0.0.5", "127.0.0.6"]], async (guesser, other) => {
      // no token at all is not a guess: it does not count
      for (let i = 0; i < 12; i++) expect((await rawRequest(gw.port, "GET", "/ath/admin/agents", {}, "", guesser)).status).toBe(401);
      for (let i = 0; i < 10; i++) expectJsonError(await admin(`wrong-${i}`, guesser!), 401, "UNAUTHORIZED");
      for (const token of ["wrong-again", gw.adminToken]) {
        const r = await admin(token, guesser!);
        expectJsonError(r, 429, "RATE_LIMITED");
        const retry = Number(r.headers["retry-after"]);
        expect(retry >= 1 && retry <= 60).toBe(true);
      }
      // other clients: untouched, wrong or right
      expectJsonError(await admin("wrong", other!), 401, "UNAUTHORIZED");
      expect((await admin(gw.adminToken, other!)).status).toBe(200);
    });
  });

  test("a wrong admin token as a bearer counts the same way (the admin API takes both forms)", async () => {
    await inOneWindow([["127.0.0.4"], ["127.0.0.7"]], async (from) => {
      const bearer = (token: string) => rawRequest(gw.port, "GET", "/ath/admin/agents", { authorization: `Bearer ${token}` }, "", from);
      expect((await bearer(gw.adminToken)).status).toBe(200);
      for (let i = 0; i < 10; i++) expectJsonError(await bearer(`wrong-${i}`), 401, "UNAUTHORIZED");
      expectJsonError(await bearer(gw.adminToken), 429, "RATE_LIMITED");
    });
  });
});

describe("requests the HTTP grammar forbids", () => {
  test("two Host fields are 400 INVALID_REQUEST (RFC 9112 §3.2), on a route that would answer 200", async () => {
    expect((await rawRequest(gw.port, "GET", "/health")).status).toBe(200);
    const r = await rawRequest(gw.port, "GET", "/health", { Host: "evil.example" });
    expectJsonError(r, 400, "INVALID_REQUEST");
    expect(JSON.parse(r.body).details).toEqual({ field: "host" });
  });

  test("CONNECT with an authority-form target is a JSON 405 with an empty Allow (the gateway tunnels nothing)", async () => {
    const r = await rawRequest(gw.port, "CONNECT", "127.0.0.1:80");
    expectJsonError(r, 405, "METHOD_NOT_ALLOWED");
    expect(r.headers.allow).toBe("");
  });

  test("CONNECT and methods no row routes are a JSON 405 with Allow on every /ath/* path — pages included", async () => {
    const paths = routeTable({ demo: false, native: false })
      .map((row) => row.path)
      .filter((p) => p.startsWith("/ath/"))
      .map((p) => p.replace(/\{[^}]+\}/g, "x").replace(/\*$/, "x"));
    expect(paths.length).toBeGreaterThan(20);
    for (const path of new Set(paths)) {
      for (const method of ["CONNECT", "TRACE"]) {
        const r = await rawRequest(gw.port, method, path);
        expect({ path, method, status: r.status, type: r.headers["content-type"], code: JSON.parse(r.body).code }).toEqual({
          path,
          method,
          status: 405,
          type: "application/json",
          code: "METHOD_NOT_ALLOWED",
        });
        expect({ path, method, allow: typeof r.headers.allow === "string" && r.headers.allow.length > 0 }).toEqual({ path, method, allow: true });
        expect(r.headers.allow).not.toContain(method);
      }
    }
  });
});
