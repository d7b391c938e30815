/**
 * The world of DESIGN §21's gate: the reference MCP server on the SDK 2.x in its three variants (both wires, 2025 only,
 * 2026 only), oidc-provider as the upstream's authorization server, and `ath serve` fronting each variant — as one
 * instance on SQLite (`one`), and as two instances on one PostgreSQL database (`pair`). Each has a front: its public
 * address (the gateways' `--base-url`), a plain pass-through that hands requests on — the pair's in turn, nothing
 * sticky — and adds an MCP client's token (got by a real code grant, the person's part in Chromium) to the MCP requests
 * that carry none: the conformance suite sends none.
 */
import { SQL } from "bun";
import type { Browser } from "playwright-core";
import { freshPage } from "./chromium.ts";
import { startGateway, type Gateway } from "./gateway.ts";
import { codeGrant, registerClient, startClientHost } from "./mcp-oauth-client.ts";
import { startReferenceMcp, type ReferenceMcp, type Wires } from "./reference-mcp/serve.ts";
import { PG_URL } from "./store-harness.ts";
import { startUpstreamAuth, type UpstreamAuth } from "./upstream-auth.ts";

/** The providers the gateways front: one per reference variant. */
export const VARIANTS: Record<string, Wires> = { ref: "both", ref2025: "2025", ref2026: "2026" };

/** A front and the gateway instances behind it. */
export interface Fronted {
  base: string;
  /** The front's MCP URL for a provider (the token added on the way). */
  url(provider: string): string;
  gateways: Gateway[];
  /** An MCP client's access token per provider (one person, one client). */
  tokens: Record<string, string>;
  /** Requests the front handed to each instance. */
  handed: number[];
}

export interface WiresWorld {
  servers: Record<string, ReferenceMcp>;
  auth: UpstreamAuth;
  /** One instance on SQLite. */
  one: Fronted;
  /** Two instances on one PostgreSQL database, taking alternate requests. */
  pair: Fronted;
  stop(): Promise<void>;
}

export async function startWiresWorld(browser: Browser, o: { pair?: boolean; binary?: boolean } = {}): Promise<WiresWorld> {
  // The fronts listen first (on ports of their own, 0: no free port looked up and raced for by the servers started
  // after it), and learn their gateways once these run.
  const listening = [front(), front()];
  const bases = listening.map((f) => f.base);
  const auth = await startUpstreamAuth({ redirectUris: bases.map((b) => `${b}/ath/callback`), scopes: ["openid", "offline_access", "tools"] });
  const servers: Record<string, ReferenceMcp> = {};
  for (const [id, wires] of Object.entries(VARIANTS)) servers[id] = await startReferenceMcp(wires);
  const providers = Object.fromEntries(
    Object.entries(servers).map(([id, s]) => [
      id,
      {
        display_name: `Reference MCP (${s.wires})`,
        available_scopes: ["openid", "offline_access", "tools"],
        authorize_endpoint: auth.authorizeEndpoint,
        token_endpoint: auth.tokenEndpoint,
        client_id: auth.postClient.client_id,
        client_secret: auth.postClient.client_secret,
        mcp: { url: s.url },
      },
    ]),
  );
  const schema = `ath_wires_${Buffer.from(crypto.getRandomValues(new Uint8Array(6))).toString("hex")}`;
  const db = new URL(PG_URL);
  db.searchParams.set("schema", schema);
  const pg = { env: { ATH_MASTER_KEY: Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("hex") }, extraArgs: ["--db", db.href] };
  const [solo, ...paired] = await Promise.all([
    startGateway({ providers, publicUrl: bases[0], binary: o.binary }),
    ...(o.pair === false ? [] : [0, 1].map(() => startGateway({ providers, publicUrl: bases[1], binary: o.binary, ...pg }))),
  ]);
  for (const [f, gateways] of [[listening[0]!, [solo!]], [listening[1]!, paired]] as const) {
    f.gateways.push(...gateways);
    f.handed.push(...gateways.map(() => 0));
  }
  if (!paired.length) await listening[1]!.stop();
  const fronts = paired.length ? listening : [listening[0]!];
  const host = await startClientHost();
  for (const f of fronts) {
    const clientId = await registerClient(f.base, host.redirectUrl, "Conformance suite");
    for (const id of Object.keys(servers)) {
      const { context, page } = await freshPage(browser);
      const t = await codeGrant(page, { base: f.base, clientId, redirectUri: host.redirectUrl, resource: `${f.base}/mcp/${id}`, login: "conformance", landings: host.landings });
      f.tokens[id] = t.access_token;
      await context.close();
    }
  }
  await host.stop();
  return {
    servers,
    auth,
    one: fronts[0]!,
    pair: fronts[1] ?? fronts[0]!,
    async stop() {
      for (const f of fronts) await f.stop();
      for (const g of [solo!, ...paired]) await g.cleanup();
      for (const s of Object.values(servers)) await s.stop();
      await auth.stop();
      if (paired.length) {
        const sql = new SQL(PG_URL);
        try {
          await sql.unsafe(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
        } finally {
          await sql.close();
        }
      }
    },
  };
}

// internal

/** A load balancer in front of `gateways` (given once they run): Host and Origin as the client sent them, requests in turn. */
function front(): Fronted & { stop(): Promise<void> } {
  const tokens: Record<string, string> = {};
  const gateways: Gateway[] = [];
  const handed: number[] = [];
  let turn = 0;
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 120,
    async fetch(req) {
      const url = new URL(req.url);
      const headers = new Headers(req.headers);
      const id = /^\/mcp\/([^/]+)$/.exec(url.pathname)?.[1];
      if (id !== undefined && !headers.has("authorization") && tokens[id]) headers.set("authorization", `Bearer ${tokens[id]}`);
      const n = turn++ % gateways.length;
      handed[n]!++;
      const init: RequestInit & { duplex?: "half"; decompress?: boolean } = { method: req.method, headers, body: req.body, redirect: "manual", decompress: false };
      if (req.body) init.duplex = "half";
      const res = await fetch(`http://127.0.0.1:${gateways[n]!.port}${url.pathname}${url.search}`, init);
      return new Response(res.body, { status: res.status, statusText: res.statusText, headers: res.headers });
    },
  });
  const base = `http://127.0.0.1:${server.port}`;
  return { base, url: (p) => `${base}/mcp/${p}`, gateways, tokens, handed, stop: () => server.stop(true) };
}
