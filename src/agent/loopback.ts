/**
 * The loopback redirect receiver of `authorize --wait` (RFC 8252 §7.3): a one-shot HTTP server on 127.0.0.1 and
 * an ephemeral port that waits for `/callback?code&state&ath_session_id` (or `error=`), checks `state` in constant
 * time and answers the browser with a small page.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import { STYLESHEET } from "../text/style.ts";
import { ClientError } from "./errors.ts";

export interface CallbackResult {
  code: string;
  sessionId?: string;
}

export interface LoopbackReceiver {
  redirectUri: string;
  /** Resolves with the code once a callback with the right state arrives; rejects on error or timeout. */
  result: Promise<CallbackResult>;
  stop(): void;
}

export interface LoopbackOptions {
  /** How long to wait for the redirect. */
  timeoutMs: number;
  /** The command a timeout message names, e.g. `ath authorize -g http://gw --provider github`. */
  retry?: string;
  /** Ends the wait early (Ctrl-C, a cancelled MCP call): `result` rejects with CANCELLED. */
  signal?: AbortSignal;
  /** The port to listen on (the identity's own, registered exactly); a port in use falls back to any free one. */
  port?: number;
}

/**
 * The identity's own loopback port, 61000–65535 from a hash of its agent_id: registered as
 * `http://127.0.0.1:<port>/callback` besides the port-less URI, so a server that matches redirect URIs exactly (not
 * by RFC 8252's any-port rule) accepts the redirect of `authorize --wait`. Above Linux's ephemeral range (32768–60999
 * by default, `net.ipv4.ip_local_port_range`): on a busy machine an outgoing connection's local port — thousands of
 * them, each held a minute in TIME_WAIT — would take the identity's port and push the wait onto another one, which a
 * server matching exactly then refuses. Identities registered before keep the port saved with them.
 */
export function loopbackPortFor(agentId: string): number {
  return LOOPBACK_PORT_LOW + (createHash("sha256").update(agentId).digest().readUInt16BE(0) % (65536 - LOOPBACK_PORT_LOW));
}

const LOOPBACK_PORT_LOW = 61000;

/** Starts the receiver; `state` is the value sent to /ath/authorize. */
export function startLoopback(state: string, o: LoopbackOptions): LoopbackReceiver {
  let settle!: { resolve: (r: CallbackResult) => void; reject: (e: unknown) => void };
  const result = new Promise<CallbackResult>((resolve, reject) => (settle = { resolve, reject }));
  // The browser may answer before the caller awaits `result` (e.g. while it opens the browser).
  result.catch(() => undefined);
  let done = false;
  const finish = (f: () => void) => {
    if (done) return;
    done = true;
    ended.removeEventListener("abort", onEnded);
    f();
  };
  // The same timeout style as every HTTP request of the agent: an AbortSignal, here with the caller's own.
  const timeout = AbortSignal.timeout(o.timeoutMs);
  const ended = o.signal === undefined ? timeout : AbortSignal.any([timeout, o.signal]);
  const onEnded = () =>
    finish(() =>
      settle.reject(
        timeout.aborted
          ? new ClientError("failure", "AUTHORIZATION_TIMEOUT", `no approval arrived within ${Math.round(o.timeoutMs / 1000)} s`, { next: `run \`${o.retry ?? "ath authorize"}\` again` })
          : new ClientError("failure", "CANCELLED", "the wait for the approval was cancelled"),
      ),
    );
  const listen = (port: number) => Bun.serve({
    hostname: "127.0.0.1",
    port,
    fetch(req: Request) {
      const url = new URL(req.url);
      if (url.pathname !== "/callback" || done) return page(404, "Not found", "Nothing is waiting here.");
      const q = url.searchParams;
      // An answer without our state may come from another page: refuse it and keep waiting for the real one.
      if (!sameState(q.get("state") ?? "", state)) return page(400, "State mismatch", "This response does not belong to the pending authorization.");
      const error = q.get("error");
      if (error !== null) {
        const code = error === "access_denied" ? "USER_DENIED" : "OAUTH_ERROR";
        const why = q.get("error_description") ?? (error === "access_denied" ? "the user denied the authorization" : error);
        finish(() => settle.reject(new ClientError("refused", code, `authorization failed: ${why}`, { status: 403, details: { error } })));
        return page(200, "Authorization denied", "You can close this tab.");
      }
      const code = q.get("code");
      if (code === null || code === "") return page(400, "Missing code", "The redirect carried no code.");
      const sessionId = q.get("ath_session_id") ?? undefined;
      finish(() => settle.resolve(sessionId === undefined ? { code } : { code, sessionId }));
      return page(200, "Authorization complete", "The agent received the approval. You can close this tab.");
    },
  });
  let server: ReturnType<typeof listen>;
  try {
    server = listen(o.port ?? 0);
  } catch (e) {
    if (o.port === undefined || (e as NodeJS.ErrnoException).code !== "EADDRINUSE") throw e;
    server = listen(0); // the identity's port is taken (another wait, another program): any port, the port-less URI
  }
  ended.addEventListener("abort", onEnded);
  if (ended.aborted) onEnded();
  return {
    redirectUri: `http://127.0.0.1:${server.port}/callback`,
    result,
    stop() {
      ended.removeEventListener("abort", onEnded);
      // Graceful: the page answering the browser's last request is still being written.
      void server.stop();
    },
  };
}

// internal

function sameState(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** The page the browser shows after the redirect; fixed strings only. Its URL carries the code: no referrer, no cache. */
function page(status: number, title: string, text: string): Response {
  const ok = status === 200 && !title.includes("denied");
  const html = `<!doctype html><html lang="en"><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>ath — ${title}</title>
<style>${STYLESHEET}</style>
<main class="card"><p class="brand">ath agent</p><h1 class="${ok ? "status-ok" : "status-bad"}">${title}</h1><p>${text}</p></main></html>`;
  return new Response(html, {
    status,
    headers: {
      "content-type": "text/html; charset=utf-8",
      "cache-control": "no-store",
      "referrer-policy": "no-referrer",
      "content-security-policy": "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'",
      "x-content-type-options": "nosniff",
    },
  });
}
