/**
 * DESIGN §18's gate: the official MCP conformance suite (`@modelcontextprotocol/conformance`, under Bun) against
 * `ath serve`.
 * - `authorization --url <ath>`: RFC 8414 metadata, and the authorization code grant the suite runs as a client of
 *   ath, with the person's part (ath's consent page, then the upstream's, oidc-provider) in headless Chromium. Exit 0.
 * - `server --url …/mcp/everything` with `@modelcontextprotocol/server-everything` as the upstream: parity with the
 *   same suite run straight at server-everything — no check that passes directly may fail or go missing through ath.
 *   The suite sends no token, so a pass-through in front of ath adds an MCP client's token (got by a real code grant).
 * Every scenario's result is printed, both ways.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { readdir, readFile } from "node:fs/promises";
import { join, resolve } from "node:path";
import type { Browser } from "playwright-core";
import { closeContexts, freshPage, sharedChromium } from "../helpers/chromium.ts";
import { startGateway, type Gateway } from "../helpers/gateway.ts";
import { codeGrant, registerClient, startClientHost } from "../helpers/mcp-oauth-client.ts";
import { freePort, tempDir } from "../helpers/net.ts";
import { clickAndWait } from "../helpers/person.ts";
import { startUpstreamAuth, type UpstreamAuth } from "../helpers/upstream-auth.ts";

const REPO = resolve(import.meta.dir, "../..");
const CONFORMANCE = join(REPO, "node_modules/@modelcontextprotocol/conformance/dist/index.js");
const EVERYTHING = join(REPO, "node_modules/@modelcontextprotocol/server-everything/dist/index.js");
const SCOPES = ["openid", "offline_access", "tools"];

let auth: UpstreamAuth;
let everything: ReturnType<typeof Bun.spawn>;
let everythingUrl: string;
let gw: Gateway;
let browser: Browser;
let base: string;
/** The token-adding pass-through's port: an origin the gateway allows at /mcp/* (--mcp-allowed-origins). */
let passThroughPort: number;

beforeAll(async () => {
  const port = await freePort();
  passThroughPort = await freePort();
  auth = await startUpstreamAuth({ redirectUris: [`http://127.0.0.1:${port}/ath/callback`], scopes: SCOPES });
  const everythingPort = await freePort();
  everything = Bun.spawn([process.execPath, EVERYTHING, "streamableHttp"], { env: { ...process.env, PORT: String(everythingPort) }, stdout: "ignore", stderr: "pipe" });
  everythingUrl = `http://127.0.0.1:${everythingPort}/mcp`;
  await waitFor(async () => (await fetch(everythingUrl, { method: "GET" }).catch(() => null)) !== null);
  gw = await startGateway({
    port,
    // the suite's valid Host/Origin are the pass-through's: a second origin the operator allows (DESIGN §21)
    extraArgs: ["--mcp-allowed-origins", `http://127.0.0.1:${passThroughPort}`],
    providers: {
      everything: {
        display_name: "Everything (MCP reference server)",
        available_scopes: SCOPES,
        authorize_endpoint: auth.authorizeEndpoint,
        token_endpoint: auth.tokenEndpoint,
        client_id: auth.postClient.client_id,
        client_secret: auth.postClient.client_secret,
        mcp: { url: everythingUrl },
      },
    },
  });
  base = gw.baseUrl;
  browser = await sharedChromium();
});

afterAll(async () => {
  await closeContexts(browser);
  await gw?.cleanup();
  everything?.kill();
  await everything?.exited;
  await auth?.stop();
});

test("authorization --url <ath>: metadata and the code grant (driven in Chromium) pass, exit 0", async () => {
  const callbackPort = await freePort();
  const clientId = await registerClient(base, `http://127.0.0.1:${callbackPort}/callback`, "MCP conformance suite");
  const out = await tempDir("conformance-auth");
  const suite = Bun.spawn(
    [process.execPath, CONFORMANCE, "authorization", "--url", base, "--client-id", clientId, "--resource", `${base}/mcp/everything`, "--port", String(callbackPort), "-o", out.path],
    { stdout: "pipe", stderr: "pipe" },
  );
  let printed = "";
  const reader = suite.stdout.getReader();
  let authorizeUrl: string | undefined;
  while (authorizeUrl === undefined) {
    const { value, done } = await reader.read();
    if (done) break;
    printed += new TextDecoder().decode(value);
    authorizeUrl = printed.split("\n").find((l) => l.startsWith(`${base}/oauth/authorize?`));
  }
  expect(authorizeUrl).toBeDefined();
  const { context, page } = await freshPage(browser);
  await page.goto(authorizeUrl!);
  expect(new URL(page.url()).pathname).toStartWith("/ath/consent/");
  expect(await page.locator("main").innerText()).toContain("MCP conformance suite");
  await clickAndWait(page, "Approve");
  await page.locator('input[name="login"]').fill("conformance");
  await clickAndWait(page, "Approve");
  expect(await page.locator("body").innerText()).toContain("OK");
  await context.close();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    printed += new TextDecoder().decode(value);
  }
  const code = await suite.exited;
  const results = await scenarioResults(out.path);
  console.log(`conformance authorization (exit ${code}):\n${report(results)}`);
  expect(code).toBe(0);
  expect(Object.keys(results).sort()).toEqual(["authorization-code-grant", "authorization-server-metadata-endpoint"]);
  for (const checks of Object.values(results)) for (const c of checks) expect(`${c.id} ${c.status}`).toBe(`${c.id} SUCCESS`);
  await out.remove();
});

test("server --url <ath>/mcp/everything keeps parity with server-everything called directly", async () => {
  // An MCP client's token for the everything server, by a real code grant; the pass-through adds it.
  const host = await startClientHost();
  const clientId = await registerClient(base, host.redirectUrl);
  const { context, page } = await freshPage(browser);
  const tokens = await codeGrant(page, { base, clientId, redirectUri: host.redirectUrl, resource: `${base}/mcp/everything`, login: "conformance", landings: host.landings });
  await context.close();
  await host.stop();
  const passThrough = Bun.serve({
    hostname: "127.0.0.1",
    port: passThroughPort,
    idleTimeout: 120,
    async fetch(req) {
      const headers = new Headers(req.headers);
      headers.delete("host");
      headers.set("authorization", `Bearer ${tokens.access_token}`);
      const init: RequestInit & { duplex?: "half"; decompress?: boolean } = { method: req.method, headers, body: req.body, redirect: "manual", decompress: false };
      if (req.body) init.duplex = "half";
      const res = await fetch(`${base}/mcp/everything`, init);
      return new Response(res.body, { status: res.status, headers: res.headers });
    },
  });
  try {
    const direct = await runServerSuite(everythingUrl);
    const through = await runServerSuite(`http://127.0.0.1:${passThrough.port}/mcp`);
    console.log(`conformance server, straight at server-everything:\n${report(direct)}`);
    console.log(`conformance server, through ath:\n${report(through)}`);
    const lost: string[] = [];
    for (const [scenario, checks] of Object.entries(direct)) {
      for (const c of checks.filter((c) => c.status === "SUCCESS")) {
        const there = through[scenario]?.find((t) => t.id === c.id && t.name === c.name);
        if (there?.status !== "SUCCESS") lost.push(`${scenario} / ${c.id}: ${there ? `${there.status} ${there.errorMessage ?? ""}` : "missing"}`);
      }
    }
    expect(lost).toEqual([]);
    expect(Object.keys(through).sort()).toEqual(Object.keys(direct).sort());
    expect(Object.keys(direct).length).toBeGreaterThan(20);
  } finally {
    await passThrough.stop(true);
  }
});

// internal

interface Check {
  id: string;
  name: string;
  status: string;
  errorMessage?: string;
}

async function runServerSuite(url: string): Promise<Record<string, Check[]>> {
  const out = await tempDir("conformance-server");
  const suite = Bun.spawn([process.execPath, CONFORMANCE, "server", "--url", url, "-o", out.path], { stdout: "pipe", stderr: "pipe" });
  await suite.exited;
  const results = await scenarioResults(out.path);
  await out.remove();
  return results;
}

/** scenario → its checks, from the suite's `-o` directory (one `<mode>-<scenario>-<time>/checks.json` each). */
async function scenarioResults(dir: string): Promise<Record<string, Check[]>> {
  const out: Record<string, Check[]> = {};
  for (const entry of await readdir(dir)) {
    const scenario = entry.replace(/^(authorization-server|server)-/, "").replace(/-\d{4}-\d\d-\d\dT.*$/, "");
    out[scenario] = JSON.parse(await readFile(join(dir, entry, "checks.json"), "utf8")) as Check[];
  }
  return out;
}

function report(results: Record<string, Check[]>): string {
  return Object.entries(results)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([scenario, checks]) => {
      const failed = checks.filter((c) => c.status !== "SUCCESS");
      return `  ${failed.length ? "✗" : "✓"} ${scenario}: ${checks.length - failed.length}/${checks.length}${failed.length ? ` — ${failed.map((c) => `${c.id} ${c.status}`).join(", ")}` : ""}`;
    })
    .join("\n");
}

async function waitFor(ok: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 100; i++) {
    if (await ok()) return;
    await Bun.sleep(100);
  }
  throw new Error("server-everything did not start");
}
