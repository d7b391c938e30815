/**
 * `ath serve` as a process: the store, the master key and the providers file from the options, createGateway behind
 * Bun.serve (TLS when configured), the sweeper, the ready line, and a graceful stop on SIGTERM/SIGINT (stop
 * accepting, finish in-flight requests, close the store).
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { AthError, PATHS } from "../protocol/index.ts";
import { openStore } from "../store/index.ts";
import { createGateway, type App } from "./app.ts";
import { fastPrefixes } from "./routes.ts";
import type { Logger } from "./context.ts";
import { loadOrCreateMasterKey } from "./crypto/sealing.ts";
import { errorResponse } from "./http/response.ts";
import { listMcpProviders, resourceOf } from "./mcp/providers.ts";
import { fileAuditPin } from "./ops/audit-pin.ts";
import { startSweeper } from "./ops/sweeper.ts";
import type { ServeOptions } from "./options.ts";
import { ConfigError, loadGatewayFile } from "./providers/file.ts";
import { fileProblem } from "../text/file-errors.ts";

export interface RunningServer {
  app: App;
  /** The public base URL. */
  url: string;
  /** Stop accepting, finish in-flight requests, close the store. */
  stop(): Promise<void>;
}

/** Starts the gateway; resolves once it is configured and listening. */
export async function startServer(o: ServeOptions, meta: { version: string; log: Logger }): Promise<RunningServer> {
  const { providers, trustedIssuers, mcpGroups } = o.providersFile ? loadGatewayFile(o.providersFile) : { providers: {}, trustedIssuers: [], mcpGroups: {} };
  if (o.mode === "native") requireOneApp(o, Object.keys(providers).length);
  if (!o.strictScopes) {
    for (const [id, c] of Object.entries(providers)) {
      if (!c.scope_rules) meta.log.warn(`provider ${id} has no scope_rules: its tokens reach every path of its API (declare scope_rules, or start with --strict-scopes to refuse such calls)`);
    }
  }
  if (o.tls) {
    for (const [flag, path] of [["--tls-cert", o.tls.cert], ["--tls-key", o.tls.key]] as const) {
      try {
        readFileSync(path, "utf8");
      } catch (e) {
        throw new ConfigError(`${flag} ${path}: cannot read it: ${fileProblem(e)}`);
      }
    }
  }
  const db = o.db ?? `sqlite:${join(o.dataDir, "ath.db")}`;
  const store = await openStoreNamingFlag(db, o.db !== undefined);
  const masterKey = loadOrCreateMasterKey(o.dataDir, o.masterKey);
  // Requests that arrive before the gateway is configured — its providers file in the store — wait for it, so nothing
  // is answered before (a port of 0 is known only once bound, and the base URL may need it).
  let app: App | undefined;
  let configured: (a: App) => void = () => undefined;
  const ready = new Promise<App>((resolve) => (configured = resolve));
  // The peer is read once per request, and only when something asks: the in-flight count near its limit, a
  // registration's or the console's per-address budget (see inFlightPerIp).
  const peers = new WeakMap<Request, string | undefined>();
  const peerOf = (req: Request): string | undefined => {
    if (peers.has(req)) return peers.get(req);
    let address: string | undefined;
    try {
      address = server.requestIP(req)?.address;
    } catch {
      address = undefined; // a request the pipeline rebuilt, or one whose connection is gone
    }
    peers.set(req, address);
    return address;
  };
  const perIp = inFlightPerIp(o.maxConnectionsPerIp, peerOf);
  const release = perIp.release;
  /**
   * A request through the app's entry `entryOf` picks, counted per address; before the app is configured, once it is.
   * Nothing made per request here (no closure): the pipeline gets the peer reader and the release themselves.
   */
  const serveWith = (req: Request, entryOf: (a: App) => App["fetch"]): Response | Promise<Response> => {
    const refused = perIp.admit(req);
    if (refused !== null) return refused;
    try {
      return app ? entryOf(app)(req, peerOf, release) : ready.then((a) => entryOf(a)(req, peerOf, release));
    } catch (err) {
      release(req);
      throw err;
    }
  };
  const wholeTable = (a: App) => a.fetch;
  const server = listen({
    hostname: o.host,
    port: o.port,
    // DESIGN §14: a request must be answered (or its body arrive) within 10 s of inactivity — a slow client cannot
    // hold a connection; an authenticated proxied request extends its own (gateway.extendTimeout). Bun's parser
    // gives request headers about 10 s to arrive, bytes trickling or not (tests/faults/isolation.test.ts).
    idleTimeout: IDLE_TIMEOUT_S,
    ...(o.tls ? { tls: { cert: Bun.file(o.tls.cert), key: Bun.file(o.tls.key) } } : {}),
    // The peer's address rides along for what is limited per client (the admin console's sign-in, requests in flight).
    // The doors every call goes through are matched by Bun itself (issue 41): no JS router walk for them.
    routes: Object.fromEntries(
      fastPrefixes({ native: o.mode === "native" }).map((prefix) => {
        const entry = (a: App) => a.under[prefix]!;
        return [`${prefix}*`, (req: Request) => serveWith(req, entry)];
      }),
    ),
    fetch: (req) => serveWith(req, wholeTable),
    // Only reached if the pipeline's own boundary failed; same exposure rule.
    error: (err) => errorResponse(err, (msg, e) => meta.log.error(msg, e)),
  });
  const scheme = o.tls ? "https" : "http";
  const url = o.baseUrl ?? `${scheme}://${o.host.includes(":") ? `[${o.host}]` : o.host}:${server.port}`;
  try {
    app = await createGateway(
      {
        baseUrl: url,
        mode: o.mode,
        version: meta.version,
        dev: o.dev,
        approval: o.approval,
        sessionTtlSeconds: o.sessionTtlSeconds,
        tokenTtlSeconds: o.tokenTtlSeconds,
        refreshTtlSeconds: o.refreshTtlSeconds,
        refreshIdleSeconds: o.refreshIdleSeconds,
        requireDpop: o.requireDpop,
        strictScopes: o.strictScopes,
        upstreamTimeoutMs: o.upstreamTimeoutMs,
        maxApprovalBody: o.maxApprovalBody,
        maxPolicyBody: o.maxPolicyBody,
        trustProxy: o.trustProxy,
        metricsPublic: o.metricsPublic,
        ...(o.metricsToken ? { metricsToken: o.metricsToken } : {}),
        rateLimits: o.rateLimits,
        maxBody: o.maxBody,
        maxProxyBody: o.maxProxyBody,
        maxDelegationDepth: o.maxDelegationDepth,
        mcpAllowedOrigins: o.mcpAllowedOrigins,
        ...(o.otlpEndpoint ? { otlpEndpoint: o.otlpEndpoint } : {}),
        upstreamConcurrency: o.upstreamConcurrency,
        providers,
        trustedIssuers,
        mcpGroups,
        ...(o.adminToken ? { adminToken: o.adminToken } : {}),
        ...(o.introspectionToken ? { introspectionToken: o.introspectionToken } : {}),
        masterKey,
        demo: o.demo,
        auditPin: fileAuditPin(o.dataDir, db),
      },
      { store, log: meta.log },
    );
  } catch (err) {
    await server.stop(true);
    await store.close();
    throw err;
  }
  app.gateway.extendTimeout = (req, seconds) => {
    try {
      server.timeout(req, seconds);
    } catch {
      // a request the pipeline rebuilt (HTTP/1.0 without Host) is not the server's: it keeps the default
    }
  };
  configured(app);
  const stopSweeper = startSweeper(app.gateway, {
    intervalMs: o.sweepIntervalMs,
    retentionMs: o.sweepRetentionMs,
    auditRetentionMs: o.auditRetentionMs,
  });
  const running = app;
  return {
    app: running,
    url,
    async stop() {
      stopSweeper();
      // New connections are refused at once; requests in flight get STOP_GRACE_MS to finish (a stream — an MCP GET
      // stream, an SSE answer — would never), then their connections are closed; the audit is written either way.
      const grace = timeout(STOP_GRACE_MS);
      await Promise.race([server.stop(false), grace.done]);
      grace.cancel();
      await server.stop(true);
      await running.close();
    },
  };
}

/**
 * Runs until SIGTERM/SIGINT: prints a generated admin token once (stderr), then exactly one line `listening on
 * <base_url>` (stdout) when ready — the signal handlers are in place before that line, since a supervisor may signal
 * as soon as it reads it — and after it where a person goes next: the admin console and each MCP server it fronts.
 */
export async function runServer(o: ServeOptions, meta: { version: string; log: Logger }): Promise<void> {
  const running = await startServer(o, meta);
  if (running.app.generatedAdminToken) {
    process.stderr.write(`admin token (shown once, store it now): ${running.app.generatedAdminToken}\n`);
  }
  const stopped = new Promise<void>((resolve) => {
    const stop = () => {
      process.off("SIGTERM", stop);
      process.off("SIGINT", stop);
      running.stop().then(resolve, (err) => {
        meta.log.error("shutdown failed", err);
        resolve();
      });
    };
    process.on("SIGTERM", stop);
    process.on("SIGINT", stop);
  });
  await Bun.sleep(0); // let the runtime install the signal handlers
  meta.log.announce(`listening on ${running.url}`);
  for (const line of await whereToGo(running)) meta.log.announce(line);
  await stopped;
  // The audit is written and the store closed: what is still pending — a call to an upstream that never answers, its
  // deadline timer — ends with the process now, not when the last of it gives up (up to --upstream-timeout).
  process.exit(0);
}

// internal

const IDLE_TIMEOUT_S = 10;

/** How long SIGTERM lets requests in flight finish before their connections are closed. */
export const STOP_GRACE_MS = 10_000;

/** A timer that can be cancelled, so a stop that finished early leaves nothing keeping the process alive. */
function timeout(ms: number): { done: Promise<void>; cancel(): void } {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const done = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms);
  });
  return { done, cancel: () => clearTimeout(timer) };
}

/** The URLs a person opens next (issue 40): the admin console, and the front door of every MCP server served now. */
async function whereToGo(running: RunningServer): Promise<string[]> {
  const mcp = await listMcpProviders(running.app.gateway);
  return [
    `admin console: ${running.url}${PATHS.adminConsole}/ (sign in with the admin token)`,
    ...mcp.map((p) => `MCP server ${p.provider_id}: ${resourceOf(running.app.gateway, p.provider_id)}`),
  ];
}

/**
 * At most `max` requests in flight per peer address (DESIGN §14): Bun exposes no per-connection hook, so requests are
 * counted from arrival until their handler answered; one more is 429 RATE_LIMITED at once. The address is the
 * socket's peer — X-Forwarded-For is not known to be trustworthy here.
 *
 * Reading the peer (Bun's `server.requestIP`) costs about a tenth of a bare hop's throughput (scripts/bench, issue 41),
 * so it is read only when it can matter: while fewer than `max` requests are in flight in all, no address can have
 * `max`, and a request is admitted unattributed. The moment the total reaches `max`, every request still in flight is
 * attributed (its peer read then) and counting is exact per address until the total falls back below `max`.
 */
export function inFlightPerIp(max: number, peerOf: (req: Request) => string | undefined) {
  const counts = new Map<string, number>();
  /** Requests in flight admitted without reading their peer. */
  const unattributed = new Set<Request>();
  /** Each attributed request's address, until it is answered. */
  const attributed = new Map<Request, string>();
  const count = (req: Request, ip: string) => {
    attributed.set(req, ip);
    counts.set(ip, (counts.get(ip) ?? 0) + 1);
  };
  return {
    /** Admits `req` (null), or refuses it at once (the 429 to answer): the admitted one's handler calls `release(req)`. */
    admit(req: Request): Response | null {
      if (unattributed.size + attributed.size < max) {
        unattributed.add(req);
        return null;
      }
      for (const r of unattributed) count(r, peerOf(r) ?? "");
      unattributed.clear();
      const ip = peerOf(req) ?? "";
      const n = counts.get(ip) ?? 0;
      if (n >= max) {
        const refused = new AthError("RATE_LIMITED", `Too many requests in flight from this address (at most ${max})`, { reason: "max_connections_per_ip" }, {
          headers: { "retry-after": "1", connection: "close" },
        });
        return errorResponse(refused, () => undefined);
      }
      count(req, ip);
      return null;
    },
    /**
     * `req` was answered. Called by the handler itself (the pipeline does, in a finally), not by a reaction on its
     * promise: each promise hop on a call's way back costs (issue 41).
     */
    release(req: Request): void {
      if (unattributed.delete(req)) return;
      const ip = attributed.get(req);
      if (ip === undefined) return;
      attributed.delete(req);
      const left = (counts.get(ip) ?? 1) - 1;
      if (left <= 0) counts.delete(ip);
      else counts.set(ip, left);
    },
  };
}

/** Native mode fronts exactly one app: the one provider of --providers, or the sandbox of --demo (DESIGN §7). */
function requireOneApp(o: ServeOptions, inFile: number): void {
  const count = inFile + (o.demo ? 1 : 0);
  if (count === 1) return;
  const source = o.providersFile ? `${o.providersFile} has ${inFile} provider${inFile === 1 ? "" : "s"}${o.demo ? " and --demo adds one" : ""}` : "no --providers file was given";
  throw new ConfigError(`--mode native fronts exactly one app, the single provider of --providers (or --demo): ${source}`);
}

/** Opens the store; a bad `--db` is a usage error naming the flag, one that cannot be reached names it too (password hidden). */
async function openStoreNamingFlag(spec: string, fromFlag: boolean): Promise<Awaited<ReturnType<typeof openStore>>> {
  const flag = fromFlag ? "--db" : "--data-dir";
  try {
    return await openStore(spec);
  } catch (e) {
    const message = (e as Error).message ?? String(e);
    if (message.startsWith("unsupported store")) throw new ConfigError(`--db: ${message}`);
    throw new Error(`${flag} ${redactUrl(spec)}: cannot open the store: ${message}`, { cause: e });
  }
}

/** `postgres://user:secret@host/db` → `postgres://user:***@host/db`. */
function redactUrl(spec: string): string {
  return spec.replace(/^([a-z][a-z0-9+.-]*:\/\/[^:/@]*):[^@/]*@/i, "$1:***@");
}

/**
 * Bun.serve, with a TLS certificate or key it cannot use reported as a usage error naming the flags, and a port in use
 * named with the flag that picks another (issue 40).
 */
function listen(options: Parameters<typeof Bun.serve>[0]): ReturnType<typeof Bun.serve> {
  try {
    return Bun.serve(options);
  } catch (e) {
    const { hostname, port } = options as { hostname?: string; port?: number };
    if ((e as NodeJS.ErrnoException).code === "EADDRINUSE") {
      throw new Error(`port ${port} on ${hostname} is already in use (another \`ath serve\`?): stop what listens there, or pick another port with --port <n> (--port 0: any free one)`, { cause: e });
    }
    if ((options as { tls?: unknown }).tls) throw new ConfigError(`--tls-cert/--tls-key: ${(e as Error).message}`);
    throw e;
  }
}
