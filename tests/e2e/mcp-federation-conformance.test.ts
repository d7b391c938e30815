/**
 * DESIGN §22's gate: the official MCP conformance suite (`server --requirements 2026-07-28` and `2025-11-25`, each
 * revision at its own wire) through a federated URL — a group of one member with an empty prefix, `/mcp/g/solo` —
 * equals the straight run at the reference MCP server (tests/helpers/reference-mcp, both wires): every scored check that
 * passes straight passes through the group. The suite sends no token: a front adds an MCP client's token for the
 * group's URL, got by a real code grant (the person's part in Chromium); the front is the gateway's public address.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import type { Browser } from "playwright-core";
import { launchChromium, freshPage } from "../helpers/chromium.ts";
import { lostChecks, only, runServerSuite, scoredScenarios, table, type Results, type Revision } from "../helpers/conformance.ts";
import { startGateway, type Gateway } from "../helpers/gateway.ts";
import { codeGrant, registerClient, startClientHost } from "../helpers/mcp-oauth-client.ts";
import { freePort } from "../helpers/net.ts";
import { startReferenceMcp, type ReferenceMcp } from "../helpers/reference-mcp/serve.ts";
import { startUpstreamAuth, type UpstreamAuth } from "../helpers/upstream-auth.ts";

const REVISIONS: Revision[] = ["2026-07-28", "2025-11-25"];
const SCOPES = ["openid", "offline_access", "tools"];

let browser: Browser;
let auth: UpstreamAuth;
let ref: ReferenceMcp;
let gw: Gateway;
let front: ReturnType<typeof Bun.serve>;
let base = "";
const straight: Partial<Record<Revision, Results>> = {};
const grouped: Partial<Record<Revision, Results>> = {};
const scored: Partial<Record<Revision, Set<string>>> = {};

beforeAll(async () => {
  browser = await launchChromium();
  const frontPort = await freePort();
  base = `http://127.0.0.1:${frontPort}`;
  auth = await startUpstreamAuth({ redirectUris: [`${base}/ath/callback`], scopes: SCOPES });
  ref = await startReferenceMcp("both");
  gw = await startGateway({
    publicUrl: base,
    providers: {
      ref: {
        display_name: "Reference MCP",
        available_scopes: SCOPES,
        authorize_endpoint: auth.authorizeEndpoint,
        token_endpoint: auth.tokenEndpoint,
        client_id: auth.postClient.client_id,
        client_secret: auth.postClient.client_secret,
        mcp: { url: ref.url },
      },
      mcp_groups: { solo: { providers: ["ref"], prefix: "" } },
    },
  });
  let token = "";
  front = Bun.serve({
    hostname: "127.0.0.1",
    port: frontPort,
    idleTimeout: 120,
    async fetch(req) {
      const url = new URL(req.url);
      const headers = new Headers(req.headers);
      if (url.pathname === "/mcp/g/solo" && !headers.has("authorization") && token) headers.set("authorization", `Bearer ${token}`);
      const init: RequestInit & { duplex?: "half"; decompress?: boolean } = { method: req.method, headers, body: req.body, redirect: "manual", decompress: false };
      if (req.body) init.duplex = "half";
      const res = await fetch(`http://127.0.0.1:${gw.port}${url.pathname}${url.search}`, init);
      return new Response(res.body, { status: res.status, statusText: res.statusText, headers: res.headers });
    },
  });
  const host = await startClientHost();
  const clientId = await registerClient(base, host.redirectUrl, "Conformance suite");
  const { context, page } = await freshPage(browser);
  token = (await codeGrant(page, { base, clientId, redirectUri: host.redirectUrl, resource: `${base}/mcp/g/solo`, login: "conformance", landings: host.landings })).access_token;
  await context.close();
  await host.stop();
  const jobs: Promise<void>[] = [];
  for (const rev of REVISIONS) {
    scored[rev] = await scoredScenarios(rev);
    jobs.push(runServerSuite(ref.url, rev).then((r) => void (straight[rev] = r)));
    jobs.push(runServerSuite(`${base}/mcp/g/solo`, rev).then((r) => void (grouped[rev] = r)));
  }
  await Promise.all(jobs);
  for (const rev of REVISIONS) console.log(`lost ${rev}:\n${lostChecks(only(straight[rev]!, scored[rev]!), grouped[rev]!).join("\n")}`);
  for (const rev of REVISIONS) {
    console.log(`conformance server --requirements ${rev} (scored scenarios), straight and through the group /mcp/g/solo:\n${table({ straight: only(straight[rev]!, scored[rev]!), group: only(grouped[rev]!, scored[rev]!) })}`);
  }
}, 600_000);

afterAll(async () => {
  await front?.stop(true);
  await gw?.cleanup();
  await ref?.stop();
  await auth?.stop();
  await browser?.close();
});

test("every scored check that passes straight at the reference server passes through a one-member group with an empty prefix, on both revisions", () => {
  for (const rev of REVISIONS) {
    expect(Object.keys(only(straight[rev]!, scored[rev]!)).sort()).toEqual([...scored[rev]!].sort());
    expect(lostChecks(only(straight[rev]!, scored[rev]!), grouped[rev]!).map((l) => l.split(":")[0]).sort()).toEqual([]);
  }
});
