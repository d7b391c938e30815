/**
 * The world of DESIGN §21's gate: the reference MCP server on the SDK 2.x in its three variants (both wires, 2025 only,
 * 2026 only), oidc-provider as the upstream's authorization server, `ath serve` fronting each variant — one instance,
 * or two on one PostgreSQL database — and a front: the gateway's public address (its `--base-url`), a plain
 * pass-through that hands requests to the instances in turn and adds an MCP client's token (got by a real code grant,
 * the person's part in Chromium) to the MCP requests that carry none — the conformance suite sends none.
 */
import { SQL } from "bun";
import type { Browser } from "playwright-core";
import { freshPage } from "./chromium.ts";
import { startGateway, type Gateway } from "./gateway.ts";
import { codeGrant, registerClient, startClientHost } from "./mcp-oauth-client.ts";
import { freePort } from "./net.ts";
import { startReferenceMcp, type ReferenceMcp, type Wires } from "./reference-mcp/serve.ts";
import { PG_URL } from "./store-harness.ts";
import { startUpstreamAuth, type UpstreamAuth } from "./upstream-auth.ts";

/** The providers the gateway fronts: one per reference variant. */
export const VARIANTS: Record<string, Wires> = { ref: "both", ref2025: "2025", ref2026: "2026" };

export interface WiresWorld {
  /** The gateway's public base URL (the front). */
  base: string;
  /** The front's MCP URL for a provider (the token added on the way). */
  url(provider: string): string;
  servers: Record<string, ReferenceMcp>;
  gateways: Gateway[];
  auth: UpstreamAuth;
  /** An MCP client's access token per provider (one person, one client). */
  tokens: Record<string, string>;
  /** Requests the front handed to each instance, in order. */
  handed: number[];
  stop(): Promise<void>;
}

export async function startWiresWorld(browser: Browser, o: { instances: 1 | 2; binary?: boolean } = { instances: 1 }): Promise<WiresWorld> {
  const frontPort = await freePort();
  const base = `http://127.0.0.1:${frontPort}`;
  const auth = await startUpstreamAuth({ redirectUris: [`${base}/ath/callback`], scopes: ["openid", "offline_access", "tools"] });
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
  const shared = o.instances === 2 ? { env: { ATH_MASTER_KEY: Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString("hex") }, extraArgs: ["--db", db.href] } : {};
  const gateways = await Promise.all(Array.from({ length: o.instances }, () => startGateway({ providers, publicUrl: base, binary: o.binary, ...shared })));
  const tokens: Record<string, string> = {};
  const handed = gateways.map(() => 0);
  let turn = 0;
  const front = Bun.serve({
    hostname: "127.0.0.1",
    port: frontPort,
    idleTimeout: 120,
    async fetch(req) {
      const url = new URL(req.url);
      const headers = new Headers(req.headers);
      // a load balancer in front: Host and Origin as the client sent them, nothing sticky
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
  const host = await startClientHost();
  const clientId = await registerClient(base, host.redirectUrl, "Conformance suite");
  for (const id of Object.keys(servers)) {
    const { context, page } = await freshPage(browser);
    const t = await codeGrant(page, { base, clientId, redirectUri: host.redirectUrl, resource: `${base}/mcp/${id}`, login: "conformance", landings: host.landings });
    tokens[id] = t.access_token;
    await context.close();
  }
  await host.stop();
  return {
    base,
    url: (provider) => `${base}/mcp/${provider}`,
    servers,
    gateways,
    auth,
    tokens,
    handed,
    async stop() {
      await front.stop(true);
      for (const g of gateways) await g.cleanup();
      for (const s of Object.values(servers)) await s.stop();
      await auth.stop();
      if (o.instances === 2) {
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
